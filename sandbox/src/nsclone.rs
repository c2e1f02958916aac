//! The strict profile's spawn: one `clone` puts the child straight into its new user, mount,
//! pid, IPC (and network) namespaces; the child builds its view, confines itself and executes
//! the command, which becomes pid 1 of its pid namespace. The caller supervises it directly.
//!
//! ```text
//! caller ──clone(CLONE_VM | CLONE_NEW{USER,NS,PID,IPC[,NET]})──▶ C, pid 1 of the new namespace
//!   C: parent-death signal → signals to default → stdio → cgroups → uid/gid maps
//!      → lo up, egress listeners → mount view + pivot_root → working directory
//!      → capabilities → NO_NEW_PRIVS → Landlock → rlimits → seccomp → execve (the command)
//!   caller: waits for C's `execve` (answering the first exec notification), then supervises
//!      the command: output, timeout (killing pid 1 ends the namespace), later exec attempts
//! with a leased view (root runner, crate::mounts::view_ns):
//! caller ──clone(CLONE_VM | CLONE_NEW{PID[,IPC: none lent][,NET]})──▶ C
//!   C: … → cgroups → setns(leased net), or lo up, egress listeners → setns(view), and
//!      setns(its IPC namespace, crate::ipcns) → the previous run's mounts detached, its own
//!      made → setns(its user namespace, crate::mounts::lent_user), or unshare(CLONE_NEWUSER)
//!      → uid/gid maps → working directory → …
//! ```
//!
//! **Why `CLONE_VM`.** A fork copies the caller's page tables, which costs about 35 ms per GiB
//! of the caller's memory; sharing the address space until `execve` (as `posix_spawn` does)
//! costs nothing per byte. It also saves what a helper binary costs: a second process image to
//! load and a supervising process, which were most of the strict profile's spawn time.
//!
//! **The rule that makes sharing safe.** Between `clone` and the end of the hand-off, C runs on
//! its own stack but with the calling thread's thread-local storage (errno, the allocator's
//! thread cache), so the calling thread must not touch either: it blocks every signal (no
//! handler can run on it), and until the status channel reaches end of file (C executed the
//! command or exited: both release the shared memory before closing descriptors) it only makes
//! system calls into buffers on its stack ([`hand_off`]). Other threads of the caller are not
//! affected: C is like one more thread that takes locks properly. C never returns and never
//! runs exit handlers.
//!
//! **pid 1.** The command is the namespace's init: when it exits, the kernel kills everything
//! else in the namespace, and the caller kills the whole tree by killing it. As pid 1 it does
//! not receive signals from inside its namespace for which it installed no handler, and its
//! orphaned descendants become its children (as in a container without an init process).

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use crate::child::{ExecImage, Reporter, REFUSED_EXIT};
use crate::request::Request;
use crate::supervisor::Supervision;

/// Stack of the cloned child: the mount view and Landlock code run on it.
const STACK_BYTES: usize = 1 << 20;

/// How long the set-up may run before the policy's timeout may kill it (see [`spawn`]).
pub(crate) const SET_UP_GRACE: Duration = Duration::from_secs(5);

/// Room for the child's status records during the hand-off; longer reports are cut.
const RECORD_BYTES: usize = 8192;

/// The descriptors of the child's standard streams: stdin, stdout, stderr.
pub(crate) type StdioFds = [RawFd; 3];

/// Everything the child reads; lives in the caller's frame until the hand-off ends.
struct ChildContext<'a> {
    req: &'a Request,
    image: &'a ExecImage,
    status: RawFd,
    notify: Option<RawFd>,
    egress: Option<RawFd>,
    stdio: Option<StdioFds>,
    euid: libc::uid_t,
    egid: libc::gid_t,
    view: Option<&'a crate::mounts::template::ViewCopy>,
    /// A leased network namespace the child joins itself (it still holds the caller's
    /// privileges: a leased view's child makes its user namespace later).
    netns: Option<RawFd>,
}

/// A spawned strict child after the hand-off.
pub(crate) struct Spawned {
    /// The command's pid (in the caller's pid namespace).
    pub pid: libc::pid_t,
    /// A pidfd for it.
    pub pidfd: OwnedFd,
    /// Status records the child sent before executing (a refusal or a failed `execve`).
    pub records: Vec<u8>,
    /// The notification listener (exec = deny, supervised `connect`), for the supervisor.
    pub listener: Option<OwnedFd>,
    /// What the supervisor admits from here on (the command's own `execve` is behind it).
    pub supervision: Supervision,
    /// The policy's timeout struck during the set-up.
    pub timed_out: bool,
}

/// Creates the child in its namespaces and waits until it executed the command (or gave up).
///
/// `stdio`: descriptors to put on 0-2 (or `None` to inherit). `egress`: the child end of the
/// egress channel. `deadline`: when the policy's timeout strikes; during the set-up it is
/// enforced no earlier than [`SET_UP_GRACE`] after the start. `view`: this run's copy of the
/// policy's view template, which the child moves into place instead of building the view.
/// `netns`: a leased empty network namespace ([`crate::netns`]) the child is cloned into
/// instead of a new one; when the calling thread cannot join it, the child gets a new one.
pub(crate) fn spawn(
    req: &Request,
    stdio: Option<StdioFds>,
    egress: Option<BorrowedFd<'_>>,
    deadline: Option<Instant>,
    supervision: Supervision,
    view: Option<&crate::mounts::template::ViewCopy>,
    netns: Option<BorrowedFd<'_>>,
) -> Result<Spawned, String> {
    let image = ExecImage::new(req)?;
    let io = |what: &str, e: std::io::Error| {
        format!("cannot set up the sandbox's {what}: {e} (is the process out of descriptors or memory?)")
    };
    let (status_r, status_w) = crate::spawn::pipe().map_err(|e| io("status pipe", e))?;
    let notify = if req.exec_notify {
        Some(
            crate::fdpass::socketpair(libc::SOCK_SEQPACKET)
                .map_err(|e| io("exec notification channel", e))?,
        )
    } else {
        None
    };
    let stack = Stack::take().map_err(|e| io("child stack", e))?;
    // A held view's child is cloned through a first child, on a stack of its own.
    let held = view.and_then(|v| v.leased().then(|| v.held()).flatten());
    let first_stack = match held {
        Some(_) => Some(Stack::take().map_err(|e| io("child stack", e))?),
        None => None,
    };
    // SAFETY: getters without pointers.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let leased_view = view.is_some_and(|v| v.leased());
    // A child cloned into a user namespace of its own can no longer join a namespace of the
    // caller's: the calling thread joins for the `clone` instead (below).
    let child_joins = match netns {
        Some(ns) if req.netns && leased_view => Some(ns.as_raw_fd()),
        _ => None,
    };
    let context = ChildContext {
        req,
        image: &image,
        status: status_w.as_raw_fd(),
        notify: notify.as_ref().map(|(_, child)| child.as_raw_fd()),
        egress: egress.map(|e| e.as_raw_fd()),
        stdio,
        euid,
        egid,
        view,
        netns: child_joins,
    };
    let mut flags = libc::CLONE_VM | libc::CLONE_PIDFD | libc::CLONE_NEWPID | libc::SIGCHLD;
    // A leased view's child joins the IPC namespace lent with it (`crate::ipcns`).
    if !view.is_some_and(|v| v.ipc_lent()) {
        flags |= libc::CLONE_NEWIPC;
    }
    // A leased view's child joins its mount namespace and makes its user namespace itself,
    // once its mounts are made (see `crate::mounts::view_ns`).
    if !leased_view {
        flags |= libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
    }
    // Otherwise a leased namespace is joined by the calling thread for the `clone` only (the
    // child inherits it), then left; the thread's own is opened first to come back to.
    let home = match netns {
        Some(_) if req.netns && child_joins.is_none() => Some(
            crate::netns::Home::here().map_err(|e| io("own network namespace descriptor", e))?,
        ),
        _ => None,
    };
    let mut pidfd: RawFd = -1;
    let saved_mask = block_all_signals();
    let joined = match (netns, &home) {
        (Some(ns), Some(_)) => crate::netns::join(ns),
        _ => false,
    };
    if req.netns && !joined && child_joins.is_none() {
        flags |= libc::CLONE_NEWNET;
    }
    let arg = (&context as *const ChildContext<'_>).cast_mut().cast();
    let mut held_refused = None;
    let pid = match (held, &first_stack) {
        // A held view: cloned in the user namespace that owns it, through a first child that
        // joins it (`crate::mounts::held`).
        (Some(user), Some(first_stack)) => {
            let unshare = flags & (libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWNET);
            // SAFETY: as for the `clone` below.
            let cloned = unsafe {
                crate::mounts::held::clone_run(
                    user,
                    unshare,
                    entry,
                    stack.top(),
                    arg,
                    &mut pidfd,
                    first_stack,
                )
            };
            cloned.unwrap_or_else(|e| {
                held_refused = Some(e);
                -1
            })
        }
        // SAFETY: the child runs `entry` on its own stack with `context`, which outlives the
        // hand-off below; from here until the hand-off ends this thread makes only system
        // calls into stack buffers (see the module documentation).
        _ => unsafe { libc::clone(entry, stack.top(), flags, arg, &mut pidfd as *mut RawFd) },
    };
    let home_again = match (&home, joined) {
        (Some(home), true) => home.back(),
        _ => true,
    };
    if !home_again {
        // This thread is left in the empty namespace: its own network would be gone. Nothing
        // may run on as if it were not; the child must not run unsupervised either.
        let why = std::io::Error::last_os_error();
        if pid > 0 {
            // SAFETY: signalling and reaping our own child.
            unsafe {
                libc::syscall(libc::SYS_pidfd_send_signal, pidfd, libc::SIGKILL, 0, 0);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
        restore_signals(&saved_mask);
        panic!(
            "toolpolicy sandbox: cannot return the calling thread to its network namespace \
             after the strict spawn ({why}); the thread would have no network"
        );
    }
    if pid < 0 {
        let err = held_refused.unwrap_or_else(std::io::Error::last_os_error);
        restore_signals(&saved_mask);
        let cause =
            crate::hostcaps::seccomp_filter_note().unwrap_or("enable unprivileged user namespaces");
        return Err(format!(
            "cannot create the sandbox's user, mount and pid namespaces: {err} ({cause}, or ask \
             for the hardened profile by name)"
        ));
    }
    // SAFETY: CLONE_PIDFD stored a new descriptor that we own.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    // The child holds its own copies; ours would keep the status pipe from reaching EOF.
    drop(status_w);
    let notify_parent = notify.map(|(parent, child)| {
        drop(child);
        parent
    });
    // Killing the child while it holds a lock of the shared allocator would leave that lock
    // taken for good. The set-up takes about a millisecond; one still running seconds later is
    // blocked in a system call (a hung mount, say), which is safe to interrupt.
    let set_up_deadline = deadline.map(|d| d.max(Instant::now() + SET_UP_GRACE));
    let mut supervision = supervision;
    let outcome = hand_off(
        pid,
        pidfd.as_raw_fd(),
        status_r.as_raw_fd(),
        notify_parent.as_ref().map(|p| p.as_raw_fd()),
        set_up_deadline,
        &mut supervision,
    );
    restore_signals(&saved_mask);
    // `context` stays in scope (and in place) to here, past the end of the hand-off.
    stack.give_back();
    if let Some(first_stack) = first_stack {
        first_stack.give_back();
    }
    Ok(Spawned {
        pid,
        pidfd,
        records: outcome.records[..outcome.len].to_vec(),
        listener: outcome.listener,
        supervision,
        timed_out: outcome.timed_out,
    })
}

/// What the caller learned while the child set itself up.
pub(crate) struct HandOff {
    records: [u8; RECORD_BYTES],
    len: usize,
    /// The exec-notification listener, when the child sent one.
    pub(crate) listener: Option<OwnedFd>,
    /// The deadline passed during the set-up: the child was killed.
    pub(crate) timed_out: bool,
}

/// Waits, without allocating, until the child has executed the command or exited: the status
/// pipe's write end is close-on-exec, so end of file means one or the other. Meanwhile: keeps
/// what the child reports, receives the exec-notification listener and lets the first
/// `execve` (the command) through, and kills the child when the deadline passes. Also the
/// hardened zygote's, whose G shares its memory the same way ([`crate::zygote`]).
pub(crate) fn hand_off(
    pid: libc::pid_t,
    pidfd: RawFd,
    status: RawFd,
    mut notify: Option<RawFd>,
    deadline: Option<Instant>,
    supervision: &mut Supervision,
) -> HandOff {
    let mut out = HandOff {
        records: [0; RECORD_BYTES],
        len: 0,
        listener: None,
        timed_out: false,
    };
    loop {
        let mut fds = [libc::pollfd {
            fd: status,
            events: libc::POLLIN,
            revents: 0,
        }; 3];
        let mut n = 1;
        if let Some(channel) = notify {
            fds[n].fd = channel;
            n += 1;
        }
        if let (Some(listener), false) = (&out.listener, supervision.first_exec_done) {
            fds[n].fd = listener.as_raw_fd();
            n += 1;
        }
        let wait_ms = match (deadline, out.timed_out) {
            (Some(d), false) => d
                .saturating_duration_since(Instant::now())
                .as_millis()
                .min(i32::MAX as u128) as i32,
            _ => -1,
        };
        // SAFETY: `fds` holds `n` initialised entries.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), n as libc::nfds_t, wait_ms) };
        if ready == 0 && deadline.is_some() && !out.timed_out {
            // The set-up itself overran the timeout: end it like the command.
            // SAFETY: signalling our child through its pidfd.
            unsafe { libc::syscall(libc::SYS_pidfd_send_signal, pidfd, libc::SIGKILL, 0, 0) };
            out.timed_out = true;
            continue;
        }
        for p in &fds[..n] {
            if p.revents == 0 {
                continue;
            }
            if p.fd == status {
                // Bytes beyond the room are read and dropped, so the child never blocks.
                let full = out.len == RECORD_BYTES;
                let mut sink = [0u8; 512];
                let buf: &mut [u8] = if full {
                    &mut sink
                } else {
                    &mut out.records[out.len..]
                };
                // SAFETY: reading into a live stack buffer of the given length.
                let got = unsafe { libc::read(status, buf.as_mut_ptr().cast(), buf.len()) };
                if got == 0 {
                    // Executed (or gone). Without exec supervision nothing held the child
                    // until its listener was taken: it may still wait in the channel.
                    if let Some(channel) = notify {
                        // SAFETY: the parent's end of the notification channel, open here.
                        let channel = unsafe { BorrowedFd::borrow_raw(channel) };
                        if let Ok(listener) = crate::fdpass::recv_one(channel) {
                            out.listener = Some(listener);
                        }
                    }
                    return out;
                }
                if got > 0 && !full {
                    out.len += got as usize;
                }
            } else if Some(p.fd) == notify {
                // SAFETY: `p.fd` is the parent's end of the notification channel, open here.
                let channel = unsafe { BorrowedFd::borrow_raw(p.fd) };
                // On failure the child refuses (its send fails) or, if it got as far as
                // `execve`, waits for an answer that never comes: kill it.
                match crate::fdpass::recv_one(channel) {
                    Ok(listener) => out.listener = Some(listener),
                    // SAFETY: signalling our child through its pidfd.
                    Err(_) => unsafe {
                        libc::syscall(libc::SYS_pidfd_send_signal, pidfd, libc::SIGKILL, 0, 0);
                    },
                }
                notify = None;
            } else if p.revents & libc::POLLIN != 0 {
                crate::supervisor::answer(
                    p.fd,
                    pid,
                    supervision,
                    crate::supervisor::Answering::HandOff,
                );
            } else {
                // The listener hung up: the child is gone.
                supervision.first_exec_done = true;
            }
        }
    }
}

/// The child. Never returns: it executes the command or reports and exits.
extern "C" fn entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the ChildContext that `spawn` keeps alive until the hand-off ends.
    let context = unsafe { &*(arg as *const ChildContext<'_>) };
    let reporter = Reporter(context.status);
    // A panic must not unwind into `clone`'s frame, which does not exist on this stack.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| set_up(context)));
    reporter.refuse(
        "the sandbox's child panicked while setting up (a bug in toolpolicy's sandbox; please \
         report it with the policy)"
            .into(),
    )
}

fn set_up(context: &ChildContext<'_>) -> ! {
    let reporter = Reporter(context.status);
    let req = context.req;
    // SAFETY: plain syscalls on integers and on our own descriptors.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // If the caller died before the line above, nobody reads the status pipe any more.
        let mut p = libc::pollfd {
            fd: context.status,
            events: libc::POLLOUT,
            revents: 0,
        };
        if libc::poll(&mut p, 1, 0) == 1 && p.revents & libc::POLLERR != 0 {
            libc::_exit(REFUSED_EXIT);
        }
        // The caller's handlers are code in memory we share: none may run here, and what the
        // caller ignores (SIGPIPE in Rust programs) must not stay ignored in the command. The
        // raw system call also reaches the two signals glibc keeps for itself.
        for signal in 1..=64 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                set_default_action(signal);
            }
        }
        if let Some(fds) = context.stdio {
            for (target, fd) in fds.into_iter().enumerate() {
                if libc::dup2(fd, target as RawFd) < 0 {
                    reporter.refuse(format!(
                        "setting up fd {target}: {}",
                        std::io::Error::last_os_error()
                    ));
                }
            }
        }
    }
    if let Err(e) = crate::cgroup::join(&req.cgroups) {
        reporter.refuse(e);
    }
    if let Some(ns) = context.netns {
        // SAFETY: setns on a descriptor the caller holds open until the hand-off ends.
        if unsafe { libc::setns(ns, libc::CLONE_NEWNET) } != 0 {
            reporter.refuse(format!(
                "joining the leased network namespace: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    let leased = context.view.is_some_and(|v| v.leased());
    if !leased {
        if let Err(e) = crate::child::write_id_maps(None, context.euid, context.egid) {
            reporter.refuse(e);
        }
    }
    if req.netns && req.loopback {
        if let Err(e) = crate::child::loopback_up() {
            reporter.refuse(format!("bringing up lo in the new network namespace: {e}"));
        }
    }
    if let (Some(plan), Some(channel)) = (&req.egress, context.egress) {
        // SAFETY: the egress channel stays open in this process until execve closes it.
        let channel = unsafe { BorrowedFd::borrow_raw(channel) };
        if let Err(e) = crate::egress::bind_inside(plan, channel) {
            reporter.refuse(format!("egress listeners: {e}"));
        }
    }
    // Building the view holds one descriptor per bind source at once: with a thousand declared
    // roots that passes the usual soft limit of 1024 open files. The soft limit is lifted to
    // the hard one meanwhile and put back for the command, once the Landlock rules made from
    // those descriptors are built.
    let open_files = lift_open_files_limit();
    let built = match context.view {
        Some(copy) => enter_template(req, copy, context.euid, context.egid)
            .map(|()| crate::child::ViewBound::Template(copy)),
        None => crate::mounts::enter(&req.mounts).map(crate::child::ViewBound::Own),
    };
    let bound = match built {
        Ok(bound) => bound,
        Err(e) => reporter.refuse(format!("building the sandbox's filesystem view: {e}")),
    };
    let cwd_ok = req
        .cwd
        .as_ref()
        .is_some_and(|cwd| std::env::set_current_dir(cwd).is_ok());
    if !cwd_ok {
        let _ = std::env::set_current_dir("/");
    }
    let view = crate::child::BuiltView { bound, open_files };
    crate::child::confine_view_and_exec(req, context.image, reporter, context.notify, Some(view))
}

/// Enters this run's copy of the view template: a tree attached in the child's own mount
/// namespace, or a leased namespace, after which the child leaves the caller's user namespace.
fn enter_template(
    req: &Request,
    copy: &crate::mounts::template::ViewCopy,
    euid: libc::uid_t,
    egid: libc::gid_t,
) -> Result<(), String> {
    use crate::mounts::template::CopyRoot;
    match &copy.root {
        CopyRoot::Tree(tree) => crate::mounts::enter_copy(&req.mounts, tree, &copy.tmp),
        CopyRoot::Namespace(ns, scratch) => {
            let user = ns.user_step(euid, egid)?;
            ns.enter(&req.mounts, scratch.as_ref(), &copy.tmp, copy.tmp_entries())?;
            user.take(euid, egid)
        }
    }
}

/// Raises the soft limit on open files to the hard limit; returns the limit to restore.
fn lift_open_files_limit() -> Option<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit with valid structs.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 || limit.rlim_cur >= limit.rlim_max
        {
            return None;
        }
        let lifted = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        (libc::setrlimit(libc::RLIMIT_NOFILE, &lifted) == 0).then_some(limit)
    }
}

/// The kernel's `struct sigaction` on x86_64 (glibc's differs and refuses signals 32 and 33).
#[repr(C)]
struct KernelSigaction {
    handler: libc::sighandler_t,
    flags: libc::c_ulong,
    restorer: usize,
    mask: u64,
}

/// Gives `signal` its default action (the raw call: it also reaches the two signals glibc
/// keeps for itself). No allocation, no lock: usable in a child that shares its caller's
/// memory.
pub(crate) fn set_default_action(signal: libc::c_int) {
    let default = KernelSigaction {
        handler: libc::SIG_DFL,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    // SAFETY: rt_sigaction with a valid struct of the kernel's layout and size 8 masks.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            signal,
            &default as *const KernelSigaction,
            std::ptr::null_mut::<KernelSigaction>(),
            8usize,
        )
    };
}

/// The action of `signal` (the raw call, as [`set_default_action`]): `SIG_DFL`, `SIG_IGN` or
/// a handler's address; `None` when the kernel names no such signal.
fn action_of(signal: libc::c_int) -> Option<libc::sighandler_t> {
    let mut old = KernelSigaction {
        handler: libc::SIG_DFL,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    // SAFETY: rt_sigaction reading the action into a valid struct of the kernel's layout.
    let read = unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            signal,
            std::ptr::null::<KernelSigaction>(),
            &mut old as *mut KernelSigaction,
            8usize,
        )
    };
    (read == 0).then_some(old.handler)
}

/// The signals this process ignores, as a mask (bit `n - 1` for signal `n`): the actions an
/// `execve` keeps.
pub(crate) fn ignored_signals() -> u64 {
    (1..=64)
        .filter(|&signal| action_of(signal) == Some(libc::SIG_IGN))
        .fold(0, |ignored, signal| ignored | 1 << (signal - 1))
}

/// Gives every signal that has a handler its default action, as an `execve` does (ignored
/// signals stay ignored): for a fork that must run none of its caller's code. The C library's
/// own signals (32 up to `SIGRTMIN`, for its threads) keep its handlers, which a fresh program
/// installs again at its start. No allocation, no lock.
pub(crate) fn drop_handlers() {
    let libc_own = 32..libc::SIGRTMIN();
    for signal in (1..=64).filter(|s| !libc_own.contains(s)) {
        if action_of(signal).is_some_and(|a| a != libc::SIG_DFL && a != libc::SIG_IGN) {
            set_default_action(signal);
        }
    }
}

/// The child's stack: an anonymous mapping with a guard page below it.
pub(crate) struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

/// Stacks of children whose hand-off ended, for the next spawns: a fresh mapping costs its
/// `mmap`, the guard page's `mprotect`, a page fault per page the set-up touches and an
/// `munmap` (with the TLB shootdown that a mapping the child's CPU used needs) per run.
static SPARE_STACKS: std::sync::Mutex<Vec<Stack>> = std::sync::Mutex::new(Vec::new());

/// At most this many stacks are kept: as many as spawns ran at once, up to this.
const SPARE_STACKS_KEPT: usize = 8;

impl Stack {
    /// A spare stack, or a new one. `try_lock`, never `lock`: a process forked while another
    /// thread held the list would otherwise wait for good on its first strict spawn.
    pub(crate) fn take() -> std::io::Result<Stack> {
        let spare = SPARE_STACKS.try_lock().ok().and_then(|mut s| s.pop());
        spare.map_or_else(Stack::new, Ok)
    }

    /// Keeps the stack for a later spawn. Only after the hand-off: the child then executed
    /// the command (a new address space) or exited, so nothing runs on it any more.
    pub(crate) fn give_back(self) {
        if let Ok(mut spare) = SPARE_STACKS.try_lock() {
            if spare.len() < SPARE_STACKS_KEPT {
                spare.push(self);
            }
        }
    }

    pub(crate) fn new() -> std::io::Result<Stack> {
        let guard = 4096;
        let len = STACK_BYTES + guard;
        // SAFETY: a fresh private anonymous mapping; the lowest page becomes the guard.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            libc::mprotect(base, guard, libc::PROT_NONE);
            Ok(Stack { base, len })
        }
    }

    /// The highest address: stacks grow down.
    pub(crate) fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of our mapping.
        unsafe { self.base.cast::<u8>().add(self.len).cast() }
    }
}

// SAFETY: a stack is a private mapping owned by one value; spare ones are used by no thread.
unsafe impl Send for Stack {}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once the child no longer uses it.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

pub(crate) fn block_all_signals() -> libc::sigset_t {
    // SAFETY: signal-set manipulation on local sets.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    }
}

pub(crate) fn restore_signals(mask: &libc::sigset_t) {
    // SAFETY: restoring a mask saved by block_all_signals.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, mask, std::ptr::null_mut()) };
}
