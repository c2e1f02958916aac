//! The per-run supervisor of the hardened profile (T), forked by the zygote
//! ([`crate::zygote`]) for each run, and the entry point of the helper binary that serves as
//! the zygote.
//!
//! ```text
//! agent ──posix_spawn, once──▶ Z (zygote): child subreaper, ends at EOF of its control socket
//!   Z ──fork, per run──▶ T (this module): child subreaper, Z's death → SIGTERM → signalfd
//!   T ──fork──▶ G: cgroups → capabilities dropped → NO_NEW_PRIVS → Landlock → rlimits → seccomp → execve
//!   T supervises G (exec notifications, timeout, the zygote's death), then kills every descendant
//! ```
//!
//! The hardened profile has no pid namespace, so something must stay behind to find and kill
//! the command's orphans: that is T. The strict profile needs no trampoline (see
//! [`crate::nsclone`]); the kernel ends its whole pid namespace with the command.
//!
//! T starts with its channels in place (stdio on 0-2, the request on [`REQUEST_FD`], the status
//! channel on [`STATUS_FD`]), reads the request to its end, and serves it.
//! Errors before `execve` are sent on the status channel as [`Status::Refused`] and end the
//! process with [`REFUSED_EXIT`], so the command never starts half-confined.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use crate::child::{ExecImage, Reporter};
use crate::plan::Profile;
use crate::request::{Request, Status, REQUEST_FD, RULESET_FD, STATUS_FD};

pub use crate::child::REFUSED_EXIT;

/// The hidden subcommand that makes a binary act as the hardened profile's zygote
/// ([`crate::zygote`]), which forks the trampoline of each run.
pub const SUBCOMMAND: &str = "__toolpolicy_zygote";

const REPORTER: Reporter = Reporter(STATUS_FD);

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn refuse(message: String) -> ! {
    REPORTER.refuse(message)
}

static SELF_SERVES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Lets the calling binary be its own sandbox helper: call it first thing in `main`. When the
/// process was started as the helper (`argv[1]` is [`SUBCOMMAND`]) it becomes the zygote and
/// never returns; otherwise it records that this executable can serve, so
/// [`crate::runner::locate_helper`] uses it and no separate `policy-sandbox` is needed.
///
/// ```no_run
/// // First statement of the agent's `main`:
/// sandbox::trampoline::serve_if_requested();
/// // ... then the agent, which runs sandboxed tools ...
/// ```
pub fn serve_if_requested() {
    if std::env::args_os().nth(1).is_some_and(|a| a == SUBCOMMAND) {
        main();
    }
    SELF_SERVES.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`serve_if_requested`] was called in this process.
pub fn self_serves() -> bool {
    SELF_SERVES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Runs the zygote ([`crate::zygote`]). Call it from `main` when `argv[1]` is [`SUBCOMMAND`];
/// never returns.
pub fn main() -> ! {
    crate::zygote::serve()
}

/// Serves one run with the channels in place: T, right after the zygote forked it. Never
/// returns.
pub(crate) fn serve_request() -> ! {
    // Only fds 0-2, our channels and the prepared ruleset, when sent, survive.
    // SAFETY: plain syscalls on fd numbers.
    unsafe {
        libc::syscall(libc::SYS_close_range, RULESET_FD as u32 + 1, u32::MAX, 0u32);
        libc::fcntl(STATUS_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(RULESET_FD, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    // SAFETY: fd 3 is the request pipe handed over by the parent.
    let mut file = unsafe { std::fs::File::from_raw_fd(REQUEST_FD) };
    let mut bytes = Vec::new();
    if let Err(e) = file.read_to_end(&mut bytes) {
        refuse(format!("reading the spawn request: {e}"));
    }
    drop(file);
    let request: Request = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(e) => refuse(format!(
            "invalid spawn request (trampoline from another version?): {e}"
        )),
    };
    let code = run(&request);
    // Everything T says went out through raw writes: nothing to flush, no exit handler of the
    // zygote's to run in this fork of it.
    // SAFETY: ending the process.
    unsafe { libc::_exit(code) }
}

fn run(req: &Request) -> i32 {
    // SAFETY: prctl and getppid take no pointers.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != req.parent_pid {
            refuse("the sandbox's zygote is gone".into());
        }
    }
    if req.profile != Profile::Hardened {
        refuse("the trampoline serves the hardened profile only (strict runs are spawned directly); is the helper from another version?".into());
    }
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) } != 0 {
        refuse(format!("PR_SET_CHILD_SUBREAPER: {}", errno()));
    }
    // Without a pid namespace nothing kills the command's children when the zygote (which ends
    // with the caller) dies: turn its death into SIGTERM, read it from a signalfd in the supervisor loop, and kill
    // the tree there.
    let fd = parent_death_signalfd();
    // SAFETY: getppid takes no pointer.
    if unsafe { libc::getppid() } != req.parent_pid {
        refuse("the sandbox's zygote is gone".into());
    }
    PARENT_DEATH_FD.store(fd, std::sync::atomic::Ordering::Relaxed);
    if let Some(cwd) = &req.cwd {
        let _ = std::env::set_current_dir(cwd);
    }
    let code = supervise_child(req);
    kill_descendants();
    code
}

/// Forks G, which confines itself and executes the command; supervises it; returns the exit
/// status to pass on.
fn supervise_child(req: &Request) -> i32 {
    let image = ExecImage::new(req).unwrap_or_else(|e| refuse(e));
    let pair = req.exec_notify.then(|| {
        crate::fdpass::socketpair(libc::SOCK_SEQPACKET)
            .unwrap_or_else(|e| refuse(format!("exec notification channel: {e}")))
    });
    // SAFETY: fork; the child only confines itself and executes.
    let child = unsafe { libc::fork() };
    if child < 0 {
        refuse(format!("fork: {}", errno()));
    }
    if child == 0 {
        // SAFETY: prctl with integers.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        // The command's tree, not the trampoline, is what the cgroups limit.
        if let Err(e) = crate::cgroup::join(&req.cgroups) {
            refuse(e);
        }
        // The command's end stays open until execve closes it; the supervisor's end closes here.
        let notify = pair.map(|(_, child_end)| child_end.into_raw_fd());
        crate::child::confine_and_exec(req, &image, REPORTER, notify);
    }
    if let Some(fd) = req.ruleset_fd {
        // G has it; T never uses it.
        // SAFETY: closing our copy of the run's ruleset.
        unsafe { libc::close(fd) };
    }
    let notify_sock = pair.map(|(supervisor_end, _)| supervisor_end);
    let supervision = crate::supervisor::Supervision::for_request(req);
    let outcome = supervise(child, notify_sock, req.timeout_ms, supervision);
    let (code, signal) = match outcome.status {
        Some(s) if libc::WIFEXITED(s) => (Some(libc::WEXITSTATUS(s)), None),
        Some(s) => (None, Some(libc::WTERMSIG(s))),
        None => (None, Some(libc::SIGKILL)),
    };
    REPORTER.report(&Status::Exited {
        code,
        signal,
        timed_out: outcome.timed_out,
    });
    match (code, signal) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 1,
    }
}

struct Outcome {
    status: Option<i32>,
    timed_out: bool,
}

/// The signalfd that reports the zygote's death (and so the caller's), or -1.
static PARENT_DEATH_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

fn parent_death_signalfd() -> RawFd {
    // SAFETY: signal set manipulation on a local set; prctl with integers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            refuse(format!("blocking SIGTERM: {}", errno()));
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            refuse(format!("signalfd: {}", errno()));
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        fd
    }
}

fn supervise(
    child: libc::pid_t,
    mut sock: Option<OwnedFd>,
    timeout_ms: Option<u64>,
    mut supervision: crate::supervisor::Supervision,
) -> Outcome {
    // SAFETY: pidfd_open takes a pid and flags.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, child, 0) } as RawFd;
    let deadline = timeout_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
    let mut listener: Option<OwnedFd> = None;
    let mut timed_out = false;
    let mut status: Option<i32> = None;
    loop {
        // Reap whatever ended (orphans reparent to us: we are a subreaper).
        loop {
            let mut s = 0;
            // SAFETY: non-blocking wait for any child.
            let r = unsafe { libc::waitpid(-1, &mut s, libc::WNOHANG) };
            if r <= 0 {
                break;
            }
            if r == child {
                status = Some(s);
            }
        }
        if status.is_some() {
            break;
        }
        let mut fds = Vec::with_capacity(4);
        let death = PARENT_DEATH_FD.load(std::sync::atomic::Ordering::Relaxed);
        if death >= 0 {
            fds.push(libc::pollfd {
                fd: death,
                events: libc::POLLIN,
                revents: 0,
            });
        }
        if pidfd >= 0 {
            fds.push(libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            });
        }
        if let Some(s) = &sock {
            fds.push(libc::pollfd {
                fd: s.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        if let Some(l) = &listener {
            fds.push(libc::pollfd {
                fd: l.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let mut wait_ms: i64 = if pidfd < 0 { 100 } else { -1 };
        if let Some(d) = deadline {
            if !timed_out {
                let left = d.saturating_duration_since(Instant::now()).as_millis() as i64;
                wait_ms = if wait_ms < 0 { left } else { wait_ms.min(left) };
            }
        }
        // SAFETY: fds is a valid array of pollfd.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait_ms as i32) };
        if n < 0 && errno().raw_os_error() != Some(libc::EINTR) {
            break;
        }
        for p in &fds {
            if p.revents == 0 {
                continue;
            }
            if p.fd == death {
                // The zygote is gone (the caller died, or it was killed): end the run as at a timeout.
                PARENT_DEATH_FD.store(-1, std::sync::atomic::Ordering::Relaxed);
                // SAFETY: signalling our own child.
                unsafe { libc::kill(child, libc::SIGKILL) };
                kill_descendants_except(child);
            } else if sock.as_ref().is_some_and(|s| s.as_raw_fd() == p.fd) {
                listener = sock
                    .take()
                    .and_then(|s| crate::fdpass::recv_one(s.as_fd()).ok());
            } else if listener.as_ref().is_some_and(|l| l.as_raw_fd() == p.fd) {
                if p.revents & (libc::POLLHUP | libc::POLLERR) != 0 && p.revents & libc::POLLIN == 0
                {
                    listener = None;
                } else {
                    crate::supervisor::answer(p.fd, child, &mut supervision, true);
                }
            }
        }
        if let Some(d) = deadline {
            if !timed_out && Instant::now() >= d {
                timed_out = true;
                // SAFETY: signalling our child.
                unsafe { libc::kill(child, libc::SIGKILL) };
                kill_descendants_except(child);
            }
        }
    }
    if pidfd >= 0 {
        // SAFETY: closing our pidfd.
        unsafe { libc::close(pidfd) };
    }
    Outcome { status, timed_out }
}

/// This process's children (orphans of a subreaper included).
pub(crate) fn children_of_self() -> Vec<libc::pid_t> {
    let me = std::process::id();
    let path = format!("/proc/{me}/task/{me}/children");
    if let Ok(text) = std::fs::read_to_string(&path) {
        return text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
    }
    // Without CONFIG_PROC_CHILDREN: scan every process's parent.
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<libc::pid_t>().ok())
            else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
                    if rest
                        .split_whitespace()
                        .nth(1)
                        .and_then(|p| p.parse::<u32>().ok())
                        == Some(me)
                    {
                        out.push(pid);
                    }
                }
            }
        }
    }
    out
}

fn kill_descendants_except(keep: libc::pid_t) {
    for pid in children_of_self() {
        if pid != keep {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// As a child subreaper, every orphaned descendant becomes our child: kill and reap until
/// none is left.
fn kill_descendants() {
    for _ in 0..10_000 {
        let kids = children_of_self();
        for &pid in &kids {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        loop {
            let mut s = 0;
            // SAFETY: reaping.
            let r = unsafe { libc::waitpid(-1, &mut s, libc::WNOHANG) };
            if r <= 0 {
                if r < 0 {
                    return; // ECHILD: nothing left
                }
                break;
            }
        }
        if kids.is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Writes to stderr of the trampoline itself (used by the CLI before a request exists).
pub fn write_stderr(message: &str) {
    let _ = std::io::stderr().write_all(message.as_bytes());
}
