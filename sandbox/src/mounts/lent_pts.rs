//! The strict view's devpts instance, lent with its view namespace instead of mounted per run.
//!
//! A strict run gets ptys of its own: a new devpts instance at `/dev/pts`, which shows none of
//! the host's. Mounting one and tearing down the previous run's cost about 70 µs per run in a
//! mount-and-detach loop (`sandbox/PERFORMANCE.md`), yet an instance that holds no pty is the
//! same for every run. So each leased view namespace ([`super::view_ns`]) mounts one when it is
//! made, and its runs use it:
//!
//! * **Mounted outside any run, owned by the runner.** The thread (or the held helper) that
//!   makes the view namespace mounts it, as a run's child did before it left the runner's user
//!   namespace: the tool holds no capability over the mount, so it cannot remount, unmount or
//!   cover it.
//! * **One run at a time**, as its view namespace.
//! * **Given back empty and unchanged, or not at all.** What of a devpts instance outlives a
//!   run: a pty whose master a process outside the run still holds (the tool may have passed it
//!   out over a unix socket), which shows as a node beside `ptmx`, and the metadata of `ptmx`
//!   and of the root, which the tool may own (a root runner's tool is the owner of both). Before
//!   the view namespace is lent again, its root must list `ptmx` alone, and the mode, owner,
//!   group, links, size, modification and change times of the root and of `ptmx` must be as
//!   they were when it was mounted (a time set with `utimensat` could carry data to the next
//!   run; a pty made and closed leaves them as they were). Access times are left out: a
//!   listing of `/dev/pts` moves the root's. Otherwise the view namespace is closed with it.
//!
//! When the instance cannot be mounted or read, the view namespace lends none, and each run's
//! child mounts its own, as before. Runs that build or copy their view per run also mount their
//! own.
//!
//! What a later run can still tell: pty numbers are handed out lowest first, so a run learns
//! nothing of earlier ones; the instance's index space is freed as each pty is released.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use super::{mount_devpts, os_err, InodeStamp};

/// A devpts instance mounted in a view namespace, with what tells whether a run left anything.
pub(crate) struct LentPts {
    /// The instance's root directory.
    root: OwnedFd,
    /// The root's and `ptmx`'s metadata as mounted.
    made: Marks,
}

/// What a run could change of the instance and leave to the next: the root's and `ptmx`'s
/// stamps.
type Marks = [InodeStamp; 2];

impl LentPts {
    /// Mounts a new instance at `/dev/pts` of the calling thread's mount namespace (a view
    /// namespace being made) and opens it.
    pub(crate) fn mount_here() -> Result<LentPts, String> {
        mount_devpts(Path::new("/dev/pts"))?;
        // SAFETY: a C string; a new descriptor owned below.
        let fd = unsafe {
            libc::open(
                c"/dev/pts".as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            )
        };
        if fd < 0 {
            return Err(os_err("open the view's devpts instance".into()));
        }
        // SAFETY: a new descriptor owned here.
        let root = unsafe { OwnedFd::from_raw_fd(fd) };
        let made = marks(&root).ok_or_else(|| os_err("stat the view's devpts instance".into()))?;
        Ok(LentPts { root, made })
    }

    /// The instance's root directory.
    pub(crate) fn root(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.root.as_fd()
    }

    /// Whether the instance holds no pty and `ptmx` and its root are as mounted (see the module
    /// docs). A call that fails counts as not empty.
    pub(crate) fn is_empty(&self) -> bool {
        marks(&self.root) == Some(self.made) && lists_ptmx_alone(&self.root)
    }
}

/// The root's and `ptmx`'s [`Marks`].
fn marks(root: &OwnedFd) -> Option<Marks> {
    let (dir, _) = InodeStamp::at(root.as_raw_fd(), c"", libc::AT_EMPTY_PATH)?;
    let (ptmx, _) = InodeStamp::at(root.as_raw_fd(), c"ptmx", 0)?;
    Some([dir, ptmx])
}

/// Whether the directory `root` lists `.`, `..` and `ptmx` and nothing else.
fn lists_ptmx_alone(root: &OwnedFd) -> bool {
    // SAFETY: lseek on our own descriptor: each check reads the directory from its start.
    if unsafe { libc::lseek(root.as_raw_fd(), 0, libc::SEEK_SET) } != 0 {
        return false;
    }
    let mut buf = [0u64; 64];
    let mut seen = 0;
    loop {
        // SAFETY: getdents64 into our own buffer, of its size in bytes.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                root.as_raw_fd(),
                buf.as_mut_ptr(),
                std::mem::size_of_val(&buf),
            )
        };
        let Ok(n) = usize::try_from(n) else {
            return false;
        };
        if n == 0 {
            return seen == 3;
        }
        // SAFETY: the kernel wrote n bytes; reading them as bytes of an aligned buffer.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n) };
        let mut at = 0;
        // Each record: inode (8), offset (8), record length (2), type (1), name (NUL-ended).
        while at + 19 < n {
            let len = usize::from(u16::from_ne_bytes([bytes[at + 16], bytes[at + 17]]));
            let Some(record) = bytes.get(at..at + len).filter(|_| len > 19) else {
                return false;
            };
            let name = record[19..].split(|b| *b == 0).next().unwrap_or_default();
            if !matches!(name, b"." | b".." | b"ptmx") {
                return false;
            }
            seen += 1;
            at += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An instance mounted in a mount namespace of a thread of its own, or `None` (after saying
    /// why) where this process may not make one (not root).
    fn mounted() -> Option<LentPts> {
        let made = std::thread::spawn(|| {
            // SAFETY: unshare of this thread's own mount namespace.
            if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
                return Err(os_err("unshare a mount namespace".into()));
            }
            super::super::make_private()?;
            LentPts::mount_here()
        })
        .join()
        .expect("thread");
        crate::test_kernel::made_as_root(made, "a devpts instance")
    }

    fn open_at(pts: &LentPts, name: &std::ffi::CStr, flags: libc::c_int) -> OwnedFd {
        // SAFETY: openat from our descriptor; the new descriptor is owned below.
        let fd = unsafe { libc::openat(pts.root.as_raw_fd(), name.as_ptr(), flags) };
        assert!(
            fd >= 0,
            "open {name:?}: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: a new descriptor.
        unsafe { OwnedFd::from_raw_fd(fd) }
    }

    #[test]
    fn an_instance_is_empty_until_a_run_leaves_a_pty_or_changes_ptmx_or_its_root() {
        let Some(pts) = mounted() else { return };
        assert!(pts.is_empty(), "a new instance is empty");
        assert!(pts.is_empty(), "a second check reads the directory again");
        // Each change below, on an instance of its own.
        type Change = fn(&LentPts) -> Option<OwnedFd>;
        let changes: [(&str, Change); 4] = [
            ("a pty held open", |pts| {
                let master = open_at(
                    pts,
                    c"ptmx",
                    libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
                );
                // SAFETY: unlockpt on our own master.
                assert_eq!(unsafe { libc::unlockpt(master.as_raw_fd()) }, 0, "unlockpt");
                Some(master)
            }),
            ("a changed mode of ptmx", |pts| {
                // SAFETY: fchmodat of ptmx under our descriptor.
                let rc =
                    unsafe { libc::fchmodat(pts.root.as_raw_fd(), c"ptmx".as_ptr(), 0o600, 0) };
                assert_eq!(rc, 0, "chmod ptmx: {}", std::io::Error::last_os_error());
                None
            }),
            ("a changed mode of the root", |pts| {
                // SAFETY: fchmod of the instance's root, our descriptor.
                let rc = unsafe { libc::fchmod(pts.root.as_raw_fd(), 0o700) };
                assert_eq!(rc, 0, "chmod the root: {}", std::io::Error::last_os_error());
                None
            }),
            ("a modification time set on ptmx", |pts| {
                super::super::set_mtime_at(pts.root.as_raw_fd(), c"ptmx", 1000);
                None
            }),
        ];
        for (what, change) in changes {
            let Some(pts) = mounted() else { return };
            let held = change(&pts);
            assert!(!pts.is_empty(), "{what} is seen");
            // A pty closed leaves nothing; a change stays.
            let closed = held.is_some();
            drop(held);
            assert_eq!(
                pts.is_empty(),
                closed,
                "{what}, then the pty closed (if any)"
            );
        }
    }
}
