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
    related(path, 0xb701, "NS_GET_USERNS")
}

/// The inode of the parent of the user namespace at `path` (`NS_GET_PARENT`).
pub fn parent_of(path: &Path) -> u64 {
    related(path, 0xb702, "NS_GET_PARENT")
}

/// The inode of the namespace the `ioctl` `request` (named `what`) gives for the one at `path`.
fn related(path: &Path, request: libc::c_ulong, what: &str) -> u64 {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::MetadataExt;
    let ns = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // SAFETY: an ioctl without a pointer argument, on a descriptor we hold.
    let fd = unsafe { libc::ioctl(ns.as_raw_fd(), request) };
    assert!(fd >= 0, "{what}: {}", std::io::Error::last_os_error());
    // SAFETY: the ioctl returned a new descriptor that we own.
    let related = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    related.metadata().expect("fstat").ino()
}
