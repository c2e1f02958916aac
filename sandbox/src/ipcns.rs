//! The strict profile's IPC namespace, lent with a view namespace instead of made per run.
//!
//! A strict run gets an IPC namespace of its own, so that the tool sees no System V object
//! or POSIX message queue of the host's and leaves none there. Making one is most of what the
//! namespaces of a strict `clone` cost beside the user namespace: the kernel registers the
//! namespace's sysctl tables and mounts its message-queue file system, about 66 µs per run
//! (`sandbox/PERFORMANCE.md`, Floors). Yet an IPC namespace that holds nothing is the same for
//! every run, so each leased view namespace ([`crate::mounts::view_ns`]) carries one, made with
//! it, and its runs' children join it with the view:
//!
//! * **Made outside any run, owned by the runner.** The thread (or, for a template held in a
//!   user namespace of its own, the helper process) that makes the view namespace `unshare`s
//!   the IPC namespace too, so the runner's user namespace (or the held one) owns it, not the
//!   tool's. The tool cannot change its limits: its `/proc` is read-only.
//! * **One run at a time**, as its view namespace: the child of the run joins it before it
//!   leaves the runner's user namespace, and two runs at the same moment hold two view
//!   namespaces.
//! * **Given back empty, or not at all.** What outlives a process in an IPC namespace is what
//!   it names: System V shared memory segments, semaphore sets and message queues, and POSIX
//!   message queues. Before the view namespace is lent again, `/proc/sysvipc/shm`, `sem` and
//!   `msg`, opened inside the IPC namespace, must list nothing, and the root of its
//!   message-queue file system (a detached mount of it, made when the namespace is) must be
//!   as large as it was then: the kernel counts each queue in that directory's size. Otherwise
//!   the view namespace is closed with it. A segment still attached needs a live process, and
//!   the namespace comes back only after the run's pid 1 was reaped, so there is none. A strict
//!   tool's `mq_open` is answered `EACCES` (Landlock refuses the open: the queues live on an
//!   internal mount that no rule reaches), yet the kernel made the queue first, so a run can
//!   leave one (`tests/view_template.rs` leaves one of each kind).
//!
//! When any of this cannot be set up (no `/proc/sysvipc`, say), the view namespace carries no
//! IPC namespace and each run's child makes its own, as before.
//!
//! What a later run can still tell: the kernel numbers System V objects from a sequence that
//! goes on, so a run that creates one learns how many an earlier run created and removed. Both
//! are runs of the same policy, which share its write roots anyway.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;

use crate::mounts::template::{detached_fs, FsCall};

/// An IPC namespace with what tells whether it holds anything.
pub(crate) struct IpcNs {
    ns: OwnedFd,
    /// `/proc/sysvipc/shm`, `sem` and `msg`, opened inside the namespace: reads list its
    /// objects, one line each after a heading.
    sysv: [File; 3],
    /// The namespace's message-queue file system, detached, and its root's size when it held
    /// no queue; `None` on a kernel without POSIX message queues.
    mqueue: Option<(OwnedFd, i64)>,
}

impl IpcNs {
    /// Moves the calling thread (or helper process), which must end soon after, into a new IPC
    /// namespace, and opens it with what checks it.
    pub(crate) fn unshare_here() -> Result<IpcNs, String> {
        let fail = |what: &str, e: std::io::Error| format!("{what}: {e}");
        let ns = crate::netns::unshare_own(libc::CLONE_NEWIPC, "ipc")?;
        let open = |kind: &str| {
            File::open(format!("/proc/sysvipc/{kind}"))
                .map_err(|e| fail(&format!("open /proc/sysvipc/{kind}"), e))
        };
        let sysv = [open("shm")?, open("sem")?, open("msg")?];
        let mqueue = match detached_fs(c"mqueue", &[], 0) {
            Ok(fs) => {
                let fs = OwnedFd::from(fs);
                let empty = directory_size(&fs).ok_or_else(|| {
                    fail(
                        "stat its message-queue file system",
                        std::io::Error::last_os_error(),
                    )
                })?;
                Some((fs, empty))
            }
            Err(e) if e.call == FsCall::Open && e.error.raw_os_error() == Some(libc::ENODEV) => {
                None
            }
            Err(e) => {
                return Err(fail(
                    &format!("{} its message-queue file system", e.call),
                    e.error,
                ))
            }
        };
        Ok(IpcNs { ns, sysv, mqueue })
    }

    /// The namespace's descriptor, for `setns`.
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.ns.as_raw_fd()
    }

    /// Whether the namespace holds no System V object and no message queue (see the module
    /// docs). A read that fails counts as not empty.
    pub(crate) fn is_empty(&self) -> bool {
        let mut buf = [0u8; 512];
        let sysv_empty = self.sysv.iter().all(|file| {
            file.read_at(&mut buf, 0).is_ok_and(|n| {
                // The heading line alone (an empty read is not one).
                let text = &buf[..n];
                n > 0 && n < buf.len() && text.iter().position(|b| *b == b'\n') == Some(n - 1)
            })
        });
        sysv_empty
            && self
                .mqueue
                .as_ref()
                .is_none_or(|(fs, empty)| directory_size(fs) == Some(*empty))
    }
}

/// The size of the directory `dir` (a message-queue file system's root grows by one entry's
/// size with each queue, from the size of `.` and `..`).
fn directory_size(dir: &OwnedFd) -> Option<i64> {
    // SAFETY: fstat fills a zeroed struct for our descriptor.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(dir.as_raw_fd(), &mut st) == 0).then_some(st.st_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A namespace made on a thread of its own, or `None` (after saying why) where this
    /// process may not make one (not root).
    fn made() -> Option<IpcNs> {
        let made = std::thread::spawn(IpcNs::unshare_here)
            .join()
            .expect("thread");
        crate::test_kernel::made_as_root(made, "an IPC namespace")
    }

    /// Runs `make` on a thread that joined `ipc`; its objects stay in the namespace.
    fn inside(ipc: &IpcNs, make: impl FnOnce() -> libc::c_int + Send) {
        let fd = ipc.raw_fd();
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: setns of this thread alone, on a descriptor `ipc` holds.
                assert_eq!(unsafe { libc::setns(fd, libc::CLONE_NEWIPC) }, 0, "join");
                assert!(make() >= 0, "make: {}", std::io::Error::last_os_error());
            });
        });
    }

    /// Makes one IPC object in the calling thread's namespace; negative on failure.
    type Make = fn() -> libc::c_int;

    #[test]
    fn each_kind_of_object_left_behind_makes_a_namespace_not_empty() {
        // SAFETY (each): System V and POSIX IPC calls with integer arguments and a C string.
        let kinds: [(&str, Make); 4] = [
            ("shm", || unsafe {
                libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o600)
            }),
            ("sem", || unsafe {
                libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600)
            }),
            ("msg", || unsafe {
                libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600)
            }),
            ("mq", || unsafe {
                let mq = libc::mq_open(
                    c"/left".as_ptr(),
                    libc::O_CREAT | libc::O_RDWR,
                    0o600 as libc::mode_t,
                    std::ptr::null_mut::<libc::mq_attr>(),
                );
                if mq >= 0 {
                    libc::mq_close(mq);
                }
                mq
            }),
        ];
        for (kind, make) in kinds {
            let Some(ipc) = made() else { return };
            assert!(ipc.is_empty(), "a new namespace is empty");
            inside(&ipc, make);
            assert!(!ipc.is_empty(), "a {kind} object left behind is seen");
        }
    }
}
