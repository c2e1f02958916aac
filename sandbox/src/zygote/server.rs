//! Z, the zygote process: a single-threaded poll loop over its control socket and a SIGCHLD
//! signalfd that forks each run's trampoline and reports its end (see [`super`]).

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::{errno, thread_cpu, CONTROL_FD, ENDED, ENDED_LEN, RUN, RUN_FDS};
use crate::request::{REQUEST_FD, RULESET_FD, STATUS_FD};

/// One run in flight: T's pid is the key.
struct Run {
    report: OwnedFd,
    /// Z's CPU time spent on the run so far: from the wake-up that received it to T's pidfd
    /// sent, then from the wake-up that reaped T to the report sent.
    cpu: Duration,
}

/// Runs the zygote; never returns. Started by [`start`] with its control socket on
/// [`CONTROL_FD`] and /dev/null on 0-2.
pub(crate) fn serve() -> ! {
    // Only 0-2 and the control socket survive: the starter may have leaked others.
    // SAFETY: plain syscalls on fd numbers and integers.
    unsafe {
        if libc::fcntl(CONTROL_FD, libc::F_GETFD) < 0 {
            // Started by hand, without a control socket: nothing to serve.
            std::process::exit(crate::child::REFUSED_EXIT);
        }
        libc::syscall(libc::SYS_close_range, CONTROL_FD as u32 + 1, u32::MAX, 0u32);
        libc::fcntl(CONTROL_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) != 0 {
            std::process::exit(crate::child::REFUSED_EXIT);
        }
    }
    // SAFETY: fd 3 is the control socket handed over by the starter, owned from here on.
    let control = unsafe { OwnedFd::from_raw_fd(CONTROL_FD) };
    let sigchld = sigchld_fd();
    let mut runs: HashMap<libc::pid_t, Run> = HashMap::new();
    loop {
        let mut fds = [
            libc::pollfd {
                fd: control.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sigchld.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: fds is a valid pollfd array.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        // What each event costs from here on is the run's (see `Run::cpu`).
        let began = thread_cpu();
        if n < 0 {
            if errno().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            std::process::exit(1);
        }
        if fds[1].revents != 0 {
            drain(sigchld.as_fd());
            reap(&mut runs, began);
        }
        if fds[0].revents != 0 {
            let mut payload = [0u8; 8];
            match crate::fdpass::recv_msg(control.as_fd(), &mut payload, RUN_FDS + 1) {
                // The agent is gone: every T notices our death and kills its command's tree.
                Ok((0, _)) => std::process::exit(0),
                Ok((4, fds))
                    if &payload[..4] == RUN && (RUN_FDS..=RUN_FDS + 1).contains(&fds.len()) =>
                {
                    start_run(fds, &mut runs, began)
                }
                // Not a run: its descriptors close as they drop.
                Ok(_) => {}
                // Interrupted, or a message with more descriptors than a run has (those that
                // came are closed): not a run.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::Interrupted | std::io::ErrorKind::InvalidData
                    ) => {}
                Err(_) => std::process::exit(1),
            }
        }
    }
}

/// SIGCHLD, blocked, as a non-blocking signalfd.
fn sigchld_fd() -> OwnedFd {
    // SAFETY: signal set manipulation on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            std::process::exit(1);
        }
        OwnedFd::from_raw_fd(fd)
    }
}

fn drain(fd: BorrowedFd<'_>) {
    let mut info = [0u8; 128];
    // SAFETY: reading into a local buffer until the non-blocking signalfd is empty.
    while unsafe { libc::read(fd.as_raw_fd(), info.as_mut_ptr().cast(), info.len()) } > 0 {}
}

/// Forks T with the run's descriptors in place, then sends T's pidfd on the run's socket.
/// A seventh descriptor is the run's prepared Landlock ruleset, which T gets as
/// [`RULESET_FD`].
fn start_run(fds: Vec<OwnedFd>, runs: &mut HashMap<libc::pid_t, Run>, began: Duration) {
    let mut fds = fds.into_iter();
    let mut channels: Vec<OwnedFd> = fds.by_ref().take(5).collect();
    let Some(report) = fds.next() else { return };
    channels.extend(fds.next());
    // SAFETY: fork of a single-threaded process; the child only moves descriptors and becomes
    // the trampoline.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        // The run's socket closes without T's pidfd: the client refuses, nothing started.
        return;
    }
    if pid == 0 {
        become_trampoline(&channels);
    }
    drop(channels);
    // SAFETY: pidfd_open on our child, not yet reaped (SIGCHLD is handled in this loop only).
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    let sent = pidfd >= 0 && {
        // SAFETY: a new descriptor, owned here.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
        crate::fdpass::send_one(report.as_fd(), pidfd.as_fd()).is_ok()
    };
    if !sent {
        // The client cannot kill it: T must not run. It has no request yet (the client writes
        // it only after the pidfd), so it refuses anyway.
        // SAFETY: signalling our child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    runs.insert(
        pid,
        Run {
            report,
            cpu: thread_cpu().saturating_sub(began),
        },
    );
}

/// In T, right after the fork: stdio on 0-2, the request on [`REQUEST_FD`], the status channel on
/// [`STATUS_FD`], the ruleset (when sent) on [`RULESET_FD`], nothing else; Z's signal mask
/// undone; then the trampoline. Never returns.
fn become_trampoline(channels: &[OwnedFd]) -> ! {
    // SAFETY: descriptor and signal-mask calls on our own process.
    unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        // Above every target first, so that no dup2 overwrites a source.
        let mut high = [-1; 6];
        for (slot, fd) in high.iter_mut().zip(channels) {
            *slot = libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10);
        }
        for (target, fd) in high.into_iter().take(channels.len()).enumerate() {
            if fd < 0 || libc::dup2(fd, target as RawFd) < 0 {
                libc::_exit(crate::child::REFUSED_EXIT);
            }
        }
        debug_assert_eq!((REQUEST_FD, STATUS_FD, RULESET_FD), (3, 4, 5));
        libc::syscall(libc::SYS_close_range, channels.len() as u32, u32::MAX, 0u32);
    }
    crate::trampoline::serve_request()
}

/// Reaps what ended: a T's end goes to its client; anything else that is our child was an
/// orphan of a killed T, and so is every child that is not a T: killed at once.
fn reap(runs: &mut HashMap<libc::pid_t, Run>, mut began: Duration) {
    let mut strays = false;
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid; wait4 fills it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: non-blocking wait for any child.
        let pid = unsafe { libc::wait4(-1, &mut status, libc::WNOHANG, &mut usage) };
        if pid <= 0 {
            break;
        }
        let Some(run) = runs.remove(&pid) else {
            strays = true;
            continue;
        };
        if !libc::WIFEXITED(status) {
            // A killed T leaves its command's survivors to us.
            strays = true;
        }
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        let t_cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
        let now = thread_cpu();
        let z_cpu = run.cpu + now.saturating_sub(began);
        began = now;
        let mut record = [0u8; ENDED_LEN];
        record[..4].copy_from_slice(ENDED);
        record[4..8].copy_from_slice(&status.to_le_bytes());
        record[8..16].copy_from_slice(&(t_cpu.as_nanos() as u64).to_le_bytes());
        record[16..24].copy_from_slice(&(z_cpu.as_nanos() as u64).to_le_bytes());
        // SAFETY: sending a local buffer; a client that is gone only loses the report.
        unsafe {
            libc::send(
                run.report.as_raw_fd(),
                record.as_ptr().cast(),
                record.len(),
                libc::MSG_NOSIGNAL,
            )
        };
    }
    if strays {
        for pid in crate::trampoline::children_of_self() {
            if !runs.contains_key(&pid) {
                // SAFETY: signalling our own child (its end brings us back here).
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}
