//! Helpers of the namespace tests (included with `#[path]`): finding a run's process on the
//! host and asking the kernel who owns one of its namespaces.

#![allow(dead_code)] // each includer uses part of it

use std::path::Path;

/// The host pid of the process whose command line holds `needle` (the run's probe).
pub fn pid_running(needle: &str) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let has = cmdline
                .split(|b| *b == 0)
                .any(|arg| arg == needle.as_bytes());
            (has && pid != std::process::id()).then_some(pid)
        })
}

pub fn inode_of(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .ino()
}

/// The inode of the user namespace that owns the namespace at `path` (`NS_GET_USERNS`).
pub fn owner_of(path: &Path) -> u64 {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::MetadataExt;
    const NS_GET_USERNS: libc::c_ulong = 0xb701;
    let ns = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // SAFETY: an ioctl without a pointer argument, on a descriptor we hold.
    let fd = unsafe { libc::ioctl(ns.as_raw_fd(), NS_GET_USERNS) };
    assert!(
        fd >= 0,
        "NS_GET_USERNS: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: the ioctl returned a new descriptor that we own.
    let owner = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    owner.metadata().expect("fstat").ino()
}

/// The inode of the parent of the user namespace at `path` (`NS_GET_PARENT`).
pub fn parent_of(path: &Path) -> u64 {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::MetadataExt;
    const NS_GET_PARENT: libc::c_ulong = 0xb702;
    let ns = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // SAFETY: an ioctl without a pointer argument, on a descriptor we hold.
    let fd = unsafe { libc::ioctl(ns.as_raw_fd(), NS_GET_PARENT) };
    assert!(
        fd >= 0,
        "NS_GET_PARENT: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: the ioctl returned a new descriptor that we own.
    let parent = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    parent.metadata().expect("fstat").ino()
}
