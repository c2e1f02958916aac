//! The strict view of a runner without `CAP_SYS_ADMIN` over its mount namespace: its template
//! and leased namespaces held in a user namespace the runner makes for them.
//!
//! Such a runner cannot make a detached mount tree where it is, so without this its runs built
//! their view themselves, one bind per declared root per run (about 11 µs each). Here the runner
//! makes, once per template, a user namespace of its own (mapping only its own uid and gid to
//! themselves) with a mount namespace in it, and builds the template there; each leased view
//! namespace is made in that user namespace too, so it belongs to it. A run's child cannot be
//! cloned into a new user namespace and then join those (it would hold no capability over
//! them), so each run takes two children:
//!
//! ```text
//! caller ──clone(CLONE_VM | CLONE_VFORK | CLONE_FILES)──▶ C1
//!   C1: setns(held user namespace) → unshare(CLONE_NEW{PID[,IPC][,NET]}: those not lent)
//!       ──clone(CLONE_VM | CLONE_PARENT | CLONE_PIDFD)──▶ C2, pid 1, the caller's child
//!   C1 exits (the caller, suspended until then, reaps it); C2 goes on as a root runner's
//!   child does with a leased view: [setns(lent network namespace)] → setns(view and its IPC
//!   namespace) → the previous run's mounts detached, its own made → setns(the view's user
//!   namespace, made inside the held one, super::lent_user), or unshare(CLONE_NEWUSER) → maps
//!   → …
//! ```
//!
//! The command therefore holds no capability over any mount of its view (they belong to the
//! held user namespace, an ancestor of its own), as a root runner's command holds none over its
//! leased view. Under `net = deny` the run is lent an empty network namespace of the held user
//! namespace too (`crate::netns`, `NetnsSource::Held`), which its child joins with the view.
//! The held user namespace maps only the runner's own ids, which every run's user namespace
//! (made with its view namespace, [`super::lent_user`]) maps again; it gives its members nothing
//! the runner lacks outside it.
//!
//! What it does not change: a process of the runner's uid outside the sandbox holds every
//! capability in the held user namespace (the kernel gives them to its owner), as it holds them
//! in each run's user namespace when the view is built per run, and as it may ptrace the runner
//! itself; the runner's uid is the boundary, not the held namespace.
//!
//! A procfs is mounted in a user namespace that is not the initial one only where one is fully
//! visible already, so a held view namespace binds the runner's `/proc` (recursively, as it
//! is) at `/proc`, beneath each run's own: the run mounts its own over it and can never
//! take it away.
//!
//! The caller's side of what a root runner makes itself, the run's scratch tmpfs and the copies
//! of the template's `/tmp` entries, is made by a helper process in the held namespaces too
//! ([`in_helper`]): `fsopen` and `open_tree` ask for `CAP_SYS_ADMIN` over the caller's mount
//! namespace. Helpers share the caller's memory and descriptors and run while the calling
//! thread is suspended (`CLONE_VFORK`), like the strict child until its hand-off.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// How a helper enters the held namespaces.
pub(crate) enum Enter {
    /// Makes the held user namespace, with a mount namespace in it, mapping `euid` and `egid`
    /// (the caller's) to themselves.
    New {
        euid: libc::uid_t,
        egid: libc::gid_t,
    },
    /// Joins the held user namespace `user`, and the mount namespace `mnt` in it.
    Join { user: RawFd, mnt: Option<RawFd> },
    /// Stays in the caller's namespaces: the work itself makes what it needs a process for
    /// (a thread of several may not make a user namespace).
    Here,
}

/// A helper's work, in memory the caller shares with it.
struct Job<F, T> {
    enter: Enter,
    work: Option<F>,
    out: Option<Result<T, String>>,
}

extern "C" fn helper<F, T>(arg: *mut libc::c_void) -> libc::c_int
where
    F: FnOnce() -> Result<T, String>,
{
    // SAFETY: `arg` is the caller's `Job`, which outlives this process (the caller waits).
    let job = unsafe { &mut *arg.cast::<Job<F, T>>() };
    let entered = match job.enter {
        Enter::New { euid, egid } => own_maps(euid, egid),
        Enter::Join { user, mnt } => join(user, mnt),
        Enter::Here => Ok(()),
    };
    let out = entered.and_then(|()| {
        let work = job.work.take().expect("a helper's work runs once");
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
            .unwrap_or_else(|_| Err(format!("a held-namespace helper panicked {BUG}")))
    });
    job.out = Some(out);
    0
}

/// What an invariant that failed means for the user.
const BUG: &str =
    "(a bug in toolpolicy's sandbox: the run builds its view itself; please report it)";

/// Writes the new held user namespace's maps: the caller's ids, each to itself.
fn own_maps(euid: libc::uid_t, egid: libc::gid_t) -> Result<(), String> {
    crate::child::write_maps(None, (euid, euid), (egid, egid))
        .map_err(|e| format!("map the held user namespace: {e}"))
}

/// Joins the held user namespace `user` and, in it, the mount namespace `mnt`.
fn join(user: RawFd, mnt: Option<RawFd>) -> Result<(), String> {
    // SAFETY: setns on descriptors the caller keeps open while this helper runs.
    unsafe {
        if libc::setns(user, libc::CLONE_NEWUSER) != 0 {
            return Err(super::os_err("join the held user namespace".into()));
        }
        if let Some(mnt) = mnt {
            if libc::setns(mnt, libc::CLONE_NEWNS) != 0 {
                return Err(super::os_err("join a held view namespace".into()));
            }
        }
    }
    Ok(())
}

/// Runs `work` in a helper process in the held namespaces (see the module docs) and returns
/// what it returned. The helper shares this process's memory and descriptors: what it opens
/// stays open here.
pub(crate) fn in_helper<F, T>(enter: Enter, work: F) -> Result<T, String>
where
    F: FnOnce() -> Result<T, String>,
{
    // No exit signal: the helper is reaped here, and a process's own SIGCHLD handler, if it has
    // one, is not woken for it.
    let mut flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES;
    if matches!(enter, Enter::New { .. }) {
        flags |= libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
    }
    let mut job = Job {
        enter,
        work: Some(work),
        out: None,
    };
    let stack = crate::nsclone::Stack::take()
        .map_err(|e| format!("a held-namespace helper's stack: {e}"))?;
    let saved = crate::nsclone::block_all_signals();
    // SAFETY: the helper runs `helper` on its own stack with `job`, which outlives it: this
    // thread is suspended until the helper exits (`CLONE_VFORK`) and touches nothing of it
    // before. Signals stay blocked meanwhile, so no handler of ours runs on the helper.
    let pid = unsafe {
        libc::clone(
            helper::<F, T>,
            stack.top(),
            flags,
            (&mut job as *mut Job<F, T>).cast(),
        )
    };
    let err = std::io::Error::last_os_error();
    if pid > 0 {
        // SAFETY: reaping our own child, which has exited or is about to.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::__WALL) };
    }
    crate::nsclone::restore_signals(&saved);
    stack.give_back();
    if pid < 0 {
        let cause =
            crate::hostcaps::seccomp_filter_note().unwrap_or("enable unprivileged user namespaces");
        return Err(format!(
            "cannot start a helper process for the runner's namespaces: {err} ({cause})"
        ));
    }
    job.out
        .unwrap_or_else(|| Err(format!("a held-namespace helper died {BUG}")))
}

/// The user namespace a runner holds its template's view in. It maps the ids the runner had
/// when it was made; a runner whose ids changed since gets another plan, and with it another
/// template (`runner::Standing` keys prepared plans by them), so no check of its own is needed.
pub(crate) struct HeldUserNs(OwnedFd);

impl HeldUserNs {
    /// In a helper made by [`in_helper`] with [`Enter::New`]: the helper's user namespace.
    pub(crate) fn here() -> Result<HeldUserNs, String> {
        // SAFETY: a C string; the new descriptor is owned below.
        let fd = unsafe {
            libc::open(
                c"/proc/self/ns/user".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(super::os_err("open the held user namespace".into()));
        }
        // SAFETY: a new descriptor owned here.
        Ok(HeldUserNs(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// What the first child of a held run needs, in memory it shares with the caller.
struct First {
    user: RawFd,
    unshare: libc::c_int,
    entry: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    stack: *mut libc::c_void,
    arg: *mut libc::c_void,
    pidfd: *mut RawFd,
    /// The second child's pid, or -1.
    pid: libc::pid_t,
    /// Which step failed (0: none; 1: join; 2: unshare; 3: clone), and its errno.
    failed: (u8, libc::c_int),
}

extern "C" fn first(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the caller's `First`, which outlives this process (the caller waits);
    // only system calls and writes into it run here.
    unsafe {
        let first = &mut *arg.cast::<First>();
        let errno = || *libc::__errno_location();
        if libc::setns(first.user, libc::CLONE_NEWUSER) != 0 {
            first.failed = (1, errno());
            return 1;
        }
        if libc::unshare(first.unshare) != 0 {
            first.failed = (2, errno());
            return 1;
        }
        // CLONE_PARENT: the second child is the caller's, which waits on it and reaps it as it
        // would the child of a direct `clone`; it takes this one's exit signal.
        let flags = libc::CLONE_VM | libc::CLONE_PARENT | libc::CLONE_PIDFD;
        first.pid = libc::clone(first.entry, first.stack, flags, first.arg, first.pidfd);
        if first.pid < 0 {
            first.failed = (3, errno());
            return 1;
        }
    }
    0
}

/// Clones the strict run's child in the held user namespace `user`, into new namespaces of
/// `unshare` (pid, IPC, network), through a first child that joins it (see the module docs):
/// the child runs `entry(arg)` on `stack`, and is this process's child, whose pid is returned
/// and whose pidfd is stored in `pidfd`. The first child runs on `first_stack`. The caller
/// blocked its signals.
///
/// Nothing here allocates once the second child may run (it uses the calling thread's
/// thread-local storage, the allocator's cache among it): the caller keeps `first_stack` until
/// the hand-off ends, as it keeps `stack`.
///
/// # Safety
///
/// As for `clone(CLONE_VM)`: `entry` runs on `stack` with `arg`, which outlive its hand-off.
pub(crate) unsafe fn clone_run(
    user: RawFd,
    unshare: libc::c_int,
    entry: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    stack: *mut libc::c_void,
    arg: *mut libc::c_void,
    pidfd: &mut RawFd,
    first_stack: &crate::nsclone::Stack,
) -> Result<libc::pid_t, std::io::Error> {
    let mut job = First {
        user,
        unshare,
        entry,
        stack,
        arg,
        pidfd,
        pid: -1,
        failed: (0, 0),
    };
    // The first child's exit signal is the second's too (`CLONE_PARENT`): SIGCHLD, so that the
    // caller's wait finds it as it finds a direct child.
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES | libc::SIGCHLD;
    // SAFETY: the first child runs `first` on its own stack with `job`; this thread is
    // suspended until it exits.
    let pid = unsafe {
        libc::clone(
            first,
            first_stack.top(),
            flags,
            (&mut job as *mut First).cast(),
        )
    };
    let err = std::io::Error::last_os_error();
    if pid < 0 {
        return Err(err);
    }
    // SAFETY: reaping our own first child, which has exited.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::__WALL) };
    match job.failed {
        (0, _) => Ok(job.pid),
        (step, errno) => {
            let what = match step {
                1 => "join the held user namespace",
                2 => "make the run's namespaces in the held user namespace",
                _ => "clone the run's child in the held user namespace",
            };
            let e = std::io::Error::from_raw_os_error(errno);
            Err(std::io::Error::new(e.kind(), format!("{what}: {e}")))
        }
    }
}
