//! Z, the zygote process: a single-threaded poll loop over its control socket, a SIGCHLD
//! signalfd and the exec-notification channels of its runs, that forks each run's G and
//! supervises every run in flight until its process group is gone (see [`super`]).

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::{errno, kill_group, thread_cpu, Group, Header, CONTROL_FD, ENDED, ENDED_LEN};
use super::{RUN_FDS, RUN_MAX_LEN};
use crate::request::{Status, REQUEST_FD, STATUS_FD};
use crate::supervisor::{Answering, Supervision};

/// Where G finds its end of the exec-notification channel, if the run has one.
const NOTIFY_FD: RawFd = STATUS_FD + 1;
/// How long a run whose G ended waits for the rest of its group to die and be reaped before
/// it is reported anyway (only a member stuck in the kernel, or one that is not Z's child and
/// whose parent does not reap it, takes that long).
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// How often the kill of an ended run's group is repeated while members are left.
const DRAIN_POLL: Duration = Duration::from_millis(5);

/// One run in flight: G's pid (its process group's id) is the key.
struct Run {
    /// G's pidfd: the run's process group, for as long as it has a member.
    pidfd: OwnedFd,
    report: OwnedFd,
    /// The status channel's write end, for the final record.
    status: OwnedFd,
    /// Z's end of the channel on which G sends its exec-notification listener.
    notify: Option<OwnedFd>,
    listener: Option<OwnedFd>,
    supervision: Supervision,
    deadline: Option<Instant>,
    timed_out: bool,
    /// G's wait status, once reaped; from then on the run waits for its group to be empty.
    ended: Option<i32>,
    /// When the wait for the group gives up (see [`DRAIN_LIMIT`]).
    drain_until: Option<Instant>,
    /// CPU time of G (its waited-for children included) and of the run's orphans reaped here.
    used: Duration,
    /// Z's own CPU time spent on the run.
    cpu: Duration,
}

/// The CPU clock of the current wake-up, charged to each run as it is served.
struct Meter(Duration);

impl Meter {
    fn charge(&mut self, run: &mut Run) {
        let now = thread_cpu();
        run.cpu += now.saturating_sub(self.0);
        self.0 = now;
    }
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
    crate::child::lock_for_children();
    // SAFETY: fd 3 is the control socket handed over by the starter, owned from here on.
    let control = unsafe { OwnedFd::from_raw_fd(CONTROL_FD) };
    let sigchld = block_signals();
    let mut runs: HashMap<libc::pid_t, Run> = HashMap::new();
    let mut watched: Vec<(libc::pid_t, bool)> = Vec::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    loop {
        fds.clear();
        watched.clear();
        for fd in [control.as_raw_fd(), sigchld.as_raw_fd()] {
            fds.push(pollin(fd));
        }
        for (&pid, run) in &runs {
            if let Some(n) = &run.notify {
                fds.push(pollin(n.as_raw_fd()));
                watched.push((pid, false));
            }
            if let Some(l) = &run.listener {
                fds.push(pollin(l.as_raw_fd()));
                watched.push((pid, true));
            }
        }
        let wait = next_wake(&runs);
        // SAFETY: fds is a valid pollfd array.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait) };
        // What each event costs from here on is its run's (see `Run::cpu`).
        let mut meter = Meter(thread_cpu());
        if n < 0 {
            if errno().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            end_all(&mut runs);
        }
        if fds[1].revents != 0 {
            drain(sigchld.as_fd());
            reap(&mut runs, &mut meter);
        }
        for (p, &(pid, is_listener)) in fds[2..].iter().zip(&watched) {
            if p.revents == 0 {
                continue;
            }
            if let Some(run) = runs.get_mut(&pid) {
                serve_channel(pid, run, is_listener, p.revents);
                meter.charge(run);
            }
        }
        enforce_deadlines(&mut runs, &mut meter);
        finish_drained(&mut runs, &mut meter);
        if fds[0].revents != 0 {
            let mut payload = [0u8; RUN_MAX_LEN];
            match crate::fdpass::recv_msg(control.as_fd(), &mut payload, RUN_FDS) {
                // The agent is gone: so are its runs.
                Ok((0, _)) => end_all(&mut runs),
                Ok((n, fds)) if fds.len() == RUN_FDS => {
                    if let Some(header) = Header::decode(&payload[..n]) {
                        start_run(header, fds, &mut runs, &mut meter);
                    }
                    // Otherwise not a run of this version: its descriptors close as they
                    // drop, and the client sees the run socket end without G's pidfd.
                }
                Ok(_) => {}
                // Interrupted, or a message with more descriptors than a run has (those that
                // came are closed): not a run.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::Interrupted | std::io::ErrorKind::InvalidData
                    ) => {}
                Err(_) => end_all(&mut runs),
            }
        }
    }
}

fn pollin(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Blocks SIGCHLD (returned as a non-blocking signalfd), SIGPIPE (a client that is gone only
/// fails a write) and the signals a terminal or a plain `kill` sends, so that Z outlives the
/// agent it serves and ends its runs when the agent's end closes the control socket. G
/// inherits the mask; the command starts with an empty one ([`crate::child`]).
fn block_signals() -> OwnedFd {
    // SAFETY: signal set manipulation on local sets.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [
            libc::SIGCHLD,
            libc::SIGPIPE,
            libc::SIGINT,
            libc::SIGQUIT,
            libc::SIGHUP,
            libc::SIGTERM,
            libc::SIGTSTP,
            libc::SIGTTIN,
            libc::SIGTTOU,
        ] {
            libc::sigaddset(&mut set, signal);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let mut child: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut child);
        libc::sigaddset(&mut child, libc::SIGCHLD);
        let fd = libc::signalfd(-1, &child, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
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

/// The poll timeout: the nearest deadline of a running command, or the next retry of an ended
/// run's group kill; -1 for none.
fn next_wake(runs: &HashMap<libc::pid_t, Run>) -> i32 {
    let now = Instant::now();
    let mut nearest: Option<Duration> = None;
    for run in runs.values() {
        let due = match (run.ended, run.deadline) {
            (Some(_), _) => Some(DRAIN_POLL),
            (None, Some(d)) if !run.timed_out => Some(d.saturating_duration_since(now)),
            _ => None,
        };
        if let Some(due) = due {
            nearest = Some(nearest.map_or(due, |n| n.min(due)));
        }
    }
    // Rounded up, so that a wake-up is never early.
    nearest.map_or(-1, |d| {
        d.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
    })
}

/// Forks G with the run's descriptors in place, then sends G's pidfd on the run's socket.
fn start_run(
    header: Header,
    fds: Vec<OwnedFd>,
    runs: &mut HashMap<libc::pid_t, Run>,
    meter: &mut Meter,
) {
    let mut fds = fds.into_iter();
    let channels: Vec<OwnedFd> = fds.by_ref().take(5).collect();
    let Some(report) = fds.next() else { return };
    let pair = if header.exec_notify {
        match crate::fdpass::socketpair(libc::SOCK_SEQPACKET) {
            Ok(pair) => Some(pair),
            // The run's socket closes without G's pidfd: the client refuses, nothing started.
            Err(_) => return,
        }
    } else {
        None
    };
    // SAFETY: getpid takes nothing.
    let zygote = unsafe { libc::getpid() };
    // SAFETY: fork of a single-threaded process; the child moves descriptors and becomes G.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return;
    }
    if pid == 0 {
        become_g(&channels, pair.as_ref().map(|(_, g)| g), zygote);
    }
    // G does it too, first thing; here it is sure before the client can know G.
    // SAFETY: setpgid on our child, which has not executed yet (EACCES afterwards: fine).
    unsafe { libc::setpgid(pid, pid) };
    let mut channels = channels;
    let status = channels.pop().expect("five channels");
    drop(channels);
    // SAFETY: pidfd_open on our child, not yet reaped (SIGCHLD is handled in this loop only).
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    if pidfd < 0 {
        // Without a pidfd neither the client nor Z can reach the group safely: G, which has
        // no request yet, must not run.
        // SAFETY: signalling and reaping our child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        return;
    }
    // SAFETY: a new descriptor, owned here.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    if crate::fdpass::send_one(report.as_fd(), pidfd.as_fd()).is_err() {
        // The client cannot kill it: G must not run. It has no request yet (the client writes
        // it only after the pidfd), so it refuses anyway; the run ends as any other.
        kill_group(pidfd.as_fd(), Some(pid));
    }
    let mut run = Run {
        pidfd,
        report,
        status,
        notify: pair.map(|(z, _)| z),
        listener: None,
        supervision: Supervision::of_execs(
            header.exec_notify,
            header.exec_budget,
            &header.exec_relays,
        ),
        deadline: header
            .timeout_ms
            .map(|ms| Instant::now() + Duration::from_millis(ms)),
        timed_out: false,
        ended: None,
        drain_until: None,
        used: Duration::ZERO,
        cpu: Duration::ZERO,
    };
    meter.charge(&mut run);
    runs.insert(pid, run);
}

/// In G, right after the fork: the parent-death signal, a process group of its own, stdio on
/// 0-2, the request on [`REQUEST_FD`], the status channel on [`STATUS_FD`], the notification
/// channel on [`NOTIFY_FD`], nothing else; then [`crate::child::serve_hardened`]. Never
/// returns.
fn become_g(channels: &[OwnedFd], notify: Option<&OwnedFd>, zygote: libc::pid_t) -> ! {
    // SAFETY: prctl, process group and descriptor calls on our own process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != zygote {
            libc::_exit(crate::child::REFUSED_EXIT);
        }
        // Z kills the run's group, so G must lead one before anything runs: never the
        // agent's, which it would otherwise be in.
        if libc::setpgid(0, 0) != 0 {
            crate::child::Reporter(channels[4].as_raw_fd())
                .refuse(format!("a process group for the command: {}", errno()));
        }
        // Above every target first, so that no dup2 overwrites a source.
        let mut high = [-1; 6];
        for (slot, fd) in high.iter_mut().zip(channels.iter().chain(notify)) {
            *slot = libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10);
        }
        let wanted = 5 + usize::from(notify.is_some());
        for (target, &fd) in high[..wanted].iter().enumerate() {
            if fd < 0 || libc::dup2(fd, target as RawFd) < 0 {
                libc::_exit(crate::child::REFUSED_EXIT);
            }
        }
        debug_assert_eq!((REQUEST_FD, STATUS_FD, NOTIFY_FD), (3, 4, 5));
        libc::syscall(libc::SYS_close_range, wanted as u32, u32::MAX, 0u32);
        libc::fcntl(STATUS_FD, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    crate::child::serve_hardened(notify.map(|_| NOTIFY_FD))
}

/// A run's exec-notification channel or listener is readable (or hung up).
fn serve_channel(pid: libc::pid_t, run: &mut Run, is_listener: bool, revents: i16) {
    let hung_up = revents & (libc::POLLHUP | libc::POLLERR) != 0 && revents & libc::POLLIN == 0;
    if !is_listener {
        // G's one message: the listener, sent just before its `execve`.
        let sock = run.notify.take();
        if !hung_up {
            run.listener = sock.and_then(|s| crate::fdpass::recv_one(s.as_fd()).ok());
        }
    } else if hung_up {
        run.listener = None;
    } else if let Some(l) = &run.listener {
        crate::supervisor::answer(
            l.as_raw_fd(),
            pid,
            &mut run.supervision,
            Answering::NoThreads,
        );
    }
}

/// Kills the group of every run whose command outlived its deadline.
fn enforce_deadlines(runs: &mut HashMap<libc::pid_t, Run>, meter: &mut Meter) {
    let now = Instant::now();
    for (&pid, run) in runs.iter_mut() {
        if run.ended.is_none() && !run.timed_out && run.deadline.is_some_and(|d| now >= d) {
            run.timed_out = true;
            // G is not reaped yet: its pid still names the group.
            kill_group(run.pidfd.as_fd(), Some(pid));
            meter.charge(run);
        }
    }
}

/// Reaps every child that ended, telling its run by its process group: G itself, or an
/// orphan of the run's (a process the run's command left, handed to Z as a child subreaper).
/// When G ended, its group is killed before G is reaped (so that its pid still names the
/// group for the fallback of [`kill_group`]); the run then waits for the group to be empty.
fn reap(runs: &mut HashMap<libc::pid_t, Run>, meter: &mut Meter) {
    loop {
        // SAFETY: an all-zero siginfo is valid; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: a non-blocking look at any child that ended, leaving it a zombie.
        let rc = unsafe {
            libc::waitid(
                libc::P_ALL,
                0,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: waitid filled the child fields (or left them zero).
        let pid = unsafe { info.si_pid() };
        if rc != 0 || pid <= 0 {
            return;
        }
        let leader = runs.contains_key(&pid);
        let group = if leader {
            pid
        } else {
            // SAFETY: getpgid on our zombie child, which keeps its group until reaped.
            unsafe { libc::getpgid(pid) }
        };
        if leader {
            if let Some(run) = runs.get(&pid) {
                kill_group(run.pidfd.as_fd(), Some(pid));
            }
        }
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid; wait4 fills it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: reaping the child waitid named.
        if unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) } != pid {
            return;
        }
        let Some(run) = runs.get_mut(&group) else {
            // Not any run's (a process that joined no run's group): already dead, now reaped.
            continue;
        };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        run.used += tv(usage.ru_utime) + tv(usage.ru_stime);
        if leader {
            run.ended = Some(status);
            run.drain_until = Some(Instant::now() + DRAIN_LIMIT);
            run.notify = None;
        }
        meter.charge(run);
    }
}

/// Reports every ended run whose group is empty (or that waited [`DRAIN_LIMIT`] for it).
fn finish_drained(runs: &mut HashMap<libc::pid_t, Run>, meter: &mut Meter) {
    let now = Instant::now();
    let done: Vec<libc::pid_t> = runs
        .iter()
        .filter(|(_, run)| {
            run.ended.is_some()
                && (kill_group(run.pidfd.as_fd(), None) == Group::Empty
                    || run.drain_until.is_some_and(|t| now >= t))
        })
        .map(|(&pid, _)| pid)
        .collect();
    for pid in done {
        if let Some(mut run) = runs.remove(&pid) {
            meter.charge(&mut run);
            report(run);
        }
    }
}

/// The run's final status record (the command's exit, as its wait status says), then Z's
/// report of the CPU time on the run's socket, which closes with it.
fn report(run: Run) {
    let status = run.ended.unwrap_or(0);
    let (code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else {
        (None, Some(libc::WTERMSIG(status)))
    };
    crate::child::Reporter(run.status.as_raw_fd()).report(&Status::Exited {
        code,
        signal,
        timed_out: run.timed_out,
    });
    drop(run.status);
    let mut record = [0u8; ENDED_LEN];
    record[..4].copy_from_slice(ENDED);
    record[4..8].copy_from_slice(&status.to_le_bytes());
    record[8..16].copy_from_slice(&(run.used.as_nanos() as u64).to_le_bytes());
    record[16..24].copy_from_slice(&(run.cpu.as_nanos() as u64).to_le_bytes());
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

/// The agent is gone (or Z cannot go on): kills every run's group, reaps what dies (bounded),
/// and exits.
fn end_all(runs: &mut HashMap<libc::pid_t, Run>) -> ! {
    let give_up = Instant::now() + DRAIN_LIMIT;
    loop {
        let mut left = false;
        for (&pid, run) in runs.iter() {
            let pinned = run.ended.is_none().then_some(pid);
            left |= kill_group(run.pidfd.as_fd(), pinned) == Group::Signalled;
        }
        loop {
            let mut status = 0;
            // SAFETY: non-blocking reaping of any child.
            if unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } <= 0 {
                break;
            }
        }
        // G's own end is no longer told apart: once reaped, its group kill answers ESRCH.
        for run in runs.values_mut() {
            run.ended.get_or_insert(0);
        }
        if !left || Instant::now() >= give_up {
            std::process::exit(0);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
