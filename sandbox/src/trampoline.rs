//! The trampoline: a small process, started with `posix_spawn` so that the caller's memory size
//! never matters, that confines itself and then runs the command.
//!
//! ```text
//! parent ──posix_spawn──▶ T (trampoline)
//!   strict:   unshare(user, mount, pid, ipc[, net]) → uid/gid maps (inner uid 1000) → lo up
//!             → egress listeners → fork C (pid 1 of the new pid namespace)
//!             C: mount view + pivot_root → fork G, supervise G (exec notifications, timeout,
//!                reaping); when C exits the kernel kills whatever is left in the namespace
//!   hardened: T becomes a child subreaper → fork G, supervise G, then kill every descendant
//!   G: rlimits → capabilities dropped → NO_NEW_PRIVS → Landlock → seccomp → execve
//! ```
//!
//! Errors before `execve` are sent on the status channel as [`Status::Refused`] and end the
//! process with 125, so the command never starts half-confined.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use crate::plan::Profile;
use crate::request::{Request, Status, EGRESS_FD, REQUEST_FD, STATUS_FD};

/// The hidden subcommand that makes a binary act as the trampoline.
pub const SUBCOMMAND: &str = "__toolpolicy_trampoline";

/// Exit status of a run the sandbox refused.
pub const REFUSED_EXIT: i32 = 125;

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn report(status: &Status) {
    let mut line = serde_json::to_vec(status).unwrap_or_default();
    line.push(b'\n');
    // SAFETY: writing a buffer to our status fd; a short or failed write only loses the report.
    unsafe { libc::write(STATUS_FD, line.as_ptr().cast(), line.len()) };
}

fn refuse(message: String) -> ! {
    report(&Status::Refused(message));
    // SAFETY: ending the process without running destructors that may touch shared state.
    unsafe { libc::_exit(REFUSED_EXIT) }
}

static SELF_SERVES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Lets the calling binary be its own trampoline: call it first thing in `main`. When the
/// process was started as the trampoline (`argv[1]` is [`SUBCOMMAND`]) it becomes the
/// trampoline and never returns; otherwise it records that this executable can serve, so
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

/// Runs the trampoline. Call it from `main` when `argv[1]` is [`SUBCOMMAND`]; never returns.
pub fn main() -> ! {
    // Only fds 0-2 and our channels survive: the caller may have leaked others.
    // SAFETY: plain syscalls on fd numbers.
    unsafe {
        libc::syscall(libc::SYS_close_range, EGRESS_FD as u32 + 1, u32::MAX, 0u32);
        libc::fcntl(STATUS_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(EGRESS_FD, libc::F_SETFD, libc::FD_CLOEXEC);
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
    std::process::exit(code)
}

fn run(req: &Request) -> i32 {
    // SAFETY: prctl and getppid take no pointers.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != req.parent_pid {
            refuse("the spawning process is gone".into());
        }
    }
    if let Some(cgroup) = &req.cgroup {
        let procs = cgroup.join("cgroup.procs");
        let pid = std::process::id().to_string();
        if let Err(e) = std::fs::write(&procs, pid) {
            refuse(format!("joining pids cgroup {}: {e}", procs.display()));
        }
    }
    match req.profile {
        Profile::Strict => strict(req),
        Profile::Hardened => {
            // SAFETY: prctl with integer arguments.
            if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) } != 0 {
                refuse(format!("PR_SET_CHILD_SUBREAPER: {}", errno()));
            }
            // Without a pid namespace nothing kills the command's children when the caller
            // dies: turn the caller's death into SIGTERM, read it from a signalfd in the
            // supervisor loop, and kill the tree there.
            let fd = parent_death_signalfd();
            // SAFETY: getppid takes no pointer.
            if unsafe { libc::getppid() } != req.parent_pid {
                refuse("the spawning process is gone".into());
            }
            PARENT_DEATH_FD.store(fd, std::sync::atomic::Ordering::Relaxed);
            if let Some(cwd) = &req.cwd {
                let _ = std::env::set_current_dir(cwd);
            }
            let code = supervise_child(req, false);
            kill_descendants();
            code
        }
    }
}

fn strict(req: &Request) -> i32 {
    // SAFETY: getters without pointers.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let mut flags =
        libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    if req.netns {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare with flags only.
    if unsafe { libc::unshare(flags) } != 0 {
        refuse(format!(
            "cannot create user/mount/pid namespaces: {} (enable user namespaces, or ask for --profile hardened)",
            errno()
        ));
    }
    // Inner uid 1000, not 0: after execve the command holds no capability at all.
    let maps = [
        ("/proc/self/setgroups", "deny".to_string()),
        ("/proc/self/uid_map", format!("1000 {euid} 1")),
        ("/proc/self/gid_map", format!("1000 {egid} 1")),
    ];
    for (file, content) in maps {
        if let Err(e) = std::fs::write(file, content) {
            refuse(format!("writing {file}: {e}"));
        }
    }
    if req.netns && req.loopback {
        if let Err(e) = loopback_up() {
            refuse(format!("bringing up lo in the new network namespace: {e}"));
        }
    }
    if let Some(plan) = &req.egress {
        // SAFETY: fd 5 is the egress channel from the parent, owned from here on.
        let channel = unsafe { OwnedFd::from_raw_fd(EGRESS_FD) };
        if let Err(e) = crate::egress::bind_inside(plan, std::os::fd::AsFd::as_fd(&channel)) {
            refuse(format!("egress listeners: {e}"));
        }
        drop(channel);
    }
    // SAFETY: fork in a single-threaded process.
    let init = unsafe { libc::fork() };
    if init < 0 {
        refuse(format!("fork: {}", errno()));
    }
    if init == 0 {
        // C: pid 1 of the new namespace.
        // SAFETY: prctl with integers.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        if let Err(e) = crate::mounts::enter(&req.mounts) {
            refuse(format!("building the sandbox's filesystem view: {e}"));
        }
        let cwd_ok = req
            .cwd
            .as_ref()
            .is_some_and(|cwd| std::env::set_current_dir(cwd).is_ok());
        if !cwd_ok {
            let _ = std::env::set_current_dir("/");
        }
        let code = supervise_child(req, true);
        // SAFETY: leaving pid 1 kills the rest of the namespace.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    loop {
        // SAFETY: waiting for our child.
        let r = unsafe { libc::waitpid(init, &mut status, 0) };
        if r == init {
            break;
        }
        if r < 0 && errno().raw_os_error() != Some(libc::EINTR) {
            refuse(format!("waiting for the sandbox init: {}", errno()));
        }
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        let sig = libc::WTERMSIG(status);
        report(&Status::Exited {
            code: None,
            signal: Some(sig),
            timed_out: false,
        });
        128 + sig
    }
}

fn loopback_up() -> std::io::Result<()> {
    // SAFETY: an ioctl pair on a throwaway socket with a zeroed ifreq naming "lo".
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(errno());
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        if libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr) < 0 {
            return Err(errno());
        }
        ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(fd.as_raw_fd(), libc::SIOCSIFFLAGS, &ifr) < 0 {
            return Err(errno());
        }
    }
    Ok(())
}

/// Forks G, which confines itself and executes the command; supervises it; returns the exit
/// status to pass on. `init`: running as pid 1 of a pid namespace (reap orphans, `kill(-1)`
/// at the timeout).
fn supervise_child(req: &Request, init: bool) -> i32 {
    let mut pair = [-1; 2];
    if req.exec_notify {
        // SAFETY: socketpair fills two fds.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                pair.as_mut_ptr(),
            )
        } != 0
        {
            refuse(format!("socketpair: {}", errno()));
        }
    }
    // SAFETY: fork; the child only confines itself and executes.
    let child = unsafe { libc::fork() };
    if child < 0 {
        refuse(format!("fork: {}", errno()));
    }
    if child == 0 {
        if req.exec_notify {
            // SAFETY: closing our copy of the supervisor's end.
            unsafe { libc::close(pair[0]) };
        }
        confine_and_exec(req, pair[1]);
    }
    let notify_sock = if req.exec_notify {
        // SAFETY: closing the child's end; owning ours.
        unsafe {
            libc::close(pair[1]);
            Some(OwnedFd::from_raw_fd(pair[0]))
        }
    } else {
        None
    };
    let outcome = supervise(child, notify_sock, req.timeout_ms, init);
    let (code, signal) = match outcome.status {
        Some(s) if libc::WIFEXITED(s) => (Some(libc::WEXITSTATUS(s)), None),
        Some(s) => (None, Some(libc::WTERMSIG(s))),
        None => (None, Some(libc::SIGKILL)),
    };
    report(&Status::Exited {
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

/// The signalfd that reports the caller's death (hardened profile), or -1.
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
    init: bool,
) -> Outcome {
    // SAFETY: pidfd_open takes a pid and flags.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, child, 0) } as RawFd;
    let deadline = timeout_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
    let mut listener: Option<OwnedFd> = None;
    let mut first_exec_done = false;
    let mut timed_out = false;
    let mut status: Option<i32> = None;
    loop {
        // Reap whatever ended (orphans reparent to us: we are pid 1 or a subreaper).
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
        let mut wait_ms: i64 = if init || pidfd < 0 { 100 } else { -1 };
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
                // The caller is gone: end the run as at a timeout.
                PARENT_DEATH_FD.store(-1, std::sync::atomic::Ordering::Relaxed);
                // SAFETY: signalling our own child.
                unsafe { libc::kill(child, libc::SIGKILL) };
                kill_descendants_except(child);
            } else if sock.as_ref().is_some_and(|s| s.as_raw_fd() == p.fd) {
                // SAFETY: `p.fd` is `sock`'s descriptor, alive for this call.
                let channel = unsafe { BorrowedFd::borrow_raw(p.fd) };
                listener = crate::fdpass::recv_fds(channel)
                    .ok()
                    .and_then(|fds| fds.into_iter().next().map(|(_, fd)| fd));
                sock = None;
            } else if listener.as_ref().is_some_and(|l| l.as_raw_fd() == p.fd) {
                if p.revents & (libc::POLLHUP | libc::POLLERR) != 0 && p.revents & libc::POLLIN == 0
                {
                    listener = None;
                } else {
                    answer_exec(p.fd, child, &mut first_exec_done);
                }
            }
        }
        if let Some(d) = deadline {
            if !timed_out && Instant::now() >= d {
                timed_out = true;
                // SAFETY: signalling our child (and, as pid 1, everything in the namespace).
                unsafe {
                    if init {
                        libc::kill(-1, libc::SIGKILL);
                    }
                    libc::kill(child, libc::SIGKILL);
                }
                if !init {
                    kill_descendants_except(child);
                }
            }
        }
    }
    if pidfd >= 0 {
        // SAFETY: closing our pidfd.
        unsafe { libc::close(pidfd) };
    }
    Outcome { status, timed_out }
}

/// Lets the command's own `execve` through and refuses every later one (exec = deny).
fn answer_exec(listener: RawFd, child: libc::pid_t, first_exec_done: &mut bool) {
    // SAFETY: the notification structs are plain data, zeroed as the kernel requires.
    unsafe {
        let mut notif: libc::seccomp_notif = std::mem::zeroed();
        if libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif) != 0 {
            return;
        }
        let mut resp: libc::seccomp_notif_resp = std::mem::zeroed();
        resp.id = notif.id;
        if !*first_exec_done && notif.pid as libc::pid_t == child {
            *first_exec_done = true;
            resp.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32;
        } else {
            resp.error = -libc::EPERM;
        }
        libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp);
    }
}

/// In G: every restriction, in the order the kernel needs, then execve. Never returns.
fn confine_and_exec(req: &Request, notify_sock: RawFd) -> ! {
    // SAFETY: prctl with integers; the command starts with no blocked signal.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    }
    let program = cstring(req.program.as_os_str().as_encoded_bytes());
    let argv: Vec<CString> = req.argv.iter().map(|a| cstring(a)).collect();
    let env: Vec<CString> = req.env.iter().map(|e| cstring(e)).collect();
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut env_ptrs: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
    env_ptrs.push(std::ptr::null());

    for &(resource, limit) in &req.rlimits {
        let rl = libc::rlimit {
            rlim_cur: limit,
            rlim_max: limit,
        };
        // SAFETY: setrlimit with a valid struct.
        if unsafe { libc::setrlimit(resource as _, &rl) } != 0 {
            refuse(format!("setrlimit({resource}, {limit}): {}", errno()));
        }
    }
    if let Err(e) = drop_capabilities() {
        refuse(e);
    }
    // SAFETY: prctl with integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        refuse(format!("PR_SET_NO_NEW_PRIVS: {}", errno()));
    }
    if let Err(e) = crate::landlock_rules::restrict_self(&req.landlock) {
        refuse(e);
    }
    if let Err(e) = crate::seccomp::install(&req.filters.deny, false) {
        refuse(format!("installing the seccomp deny-list: {e}"));
    }
    match crate::seccomp::install(&req.filters.guard, req.exec_notify) {
        Ok(Some(listener)) => {
            // SAFETY: both descriptors are open until closed just below.
            let (channel, fd) = unsafe {
                (
                    BorrowedFd::borrow_raw(notify_sock),
                    BorrowedFd::borrow_raw(listener),
                )
            };
            if let Err(e) = crate::fdpass::send_fds(channel, &[(0, fd)]) {
                refuse(format!("handing the exec listener to the supervisor: {e}"));
            }
            // SAFETY: our copies are no longer needed.
            unsafe {
                libc::close(listener);
                libc::close(notify_sock);
            }
        }
        Ok(None) => {}
        Err(e) => refuse(format!("installing the seccomp guard: {e}")),
    }
    // SAFETY: mark every fd above stderr close-on-exec; then execute.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
        libc::execve(program.as_ptr(), argv_ptrs.as_ptr(), env_ptrs.as_ptr());
    }
    let err = errno();
    let code = if err.raw_os_error() == Some(libc::ENOENT) {
        127
    } else {
        126
    };
    report(&Status::ExecFailed {
        message: format!("{}: {err}", req.program.display()),
        code,
    });
    // SAFETY: leaving the failed child.
    unsafe { libc::_exit(code) }
}

fn cstring(bytes: &[u8]) -> CString {
    match CString::new(bytes) {
        Ok(c) => c,
        Err(_) => refuse("an argument or environment entry contains NUL".into()),
    }
}

/// Drops every capability for good: securebits (root keeps none across execve), bounding and
/// ambient sets, then the current sets.
fn drop_capabilities() -> Result<(), String> {
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
    const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
    const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
    const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
    const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
    // SAFETY: prctl/capset with valid arguments.
    unsafe {
        let holds_setpcap = has_effective_cap(8);
        if holds_setpcap {
            let bits = SECBIT_NOROOT
                | SECBIT_NOROOT_LOCKED
                | SECBIT_NO_SETUID_FIXUP
                | SECBIT_NO_SETUID_FIXUP_LOCKED
                | SECBIT_KEEP_CAPS_LOCKED
                | SECBIT_NO_CAP_AMBIENT_RAISE
                | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
            if libc::prctl(libc::PR_SET_SECUREBITS, bits) != 0 {
                return Err(format!("PR_SET_SECUREBITS: {}", errno()));
            }
            for cap in 0..=63 {
                if libc::prctl(libc::PR_CAPBSET_READ, cap) < 0 {
                    break;
                }
                if libc::prctl(libc::PR_CAPBSET_DROP, cap) != 0 {
                    return Err(format!("PR_CAPBSET_DROP({cap}): {}", errno()));
                }
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let header = CapHeader {
            version: 0x2008_0522,
            pid: 0,
        };
        let data = [CapData::default(); 2];
        if libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) != 0 {
            return Err(format!("capset: {}", errno()));
        }
    }
    Ok(())
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

fn has_effective_cap(cap: u32) -> bool {
    let header = CapHeader {
        version: 0x2008_0522,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget fills two CapData.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &header as *const CapHeader,
            data.as_mut_ptr(),
        )
    };
    rc == 0 && data[(cap / 32) as usize].effective & (1 << (cap % 32)) != 0
}

fn children_of_self() -> Vec<libc::pid_t> {
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
