//! Z, the zygote process: a single-threaded poll loop over its control socket, a SIGCHLD
//! signalfd, the request pipes of runs about to start and the exec-notification listeners of
//! runs in flight, that starts each run's G and supervises every run until its process group
//! is gone (see [`super`]).
//!
//! G is started with `clone(CLONE_VM)` on a stack of its own, as the strict profile's child is
//! ([`crate::nsclone`]): it shares Z's memory until its `execve`, so no page table is copied
//! and none torn down. Z waits for that `execve` (or G's end) in [`crate::nsclone::hand_off`],
//! making only system calls into stack buffers meanwhile (G uses Z's thread-local storage
//! and allocator); the command's own `execve` passes its sealed tail without a notification.
//! The request and the program's image are Z's: parsed and built before the `clone`, freed
//! after the hand-off.

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::{errno, kill_group, thread_cpu, Group, CONTROL_FD, ENDED, ENDED_LEN};
use super::{FLOOR, INLINE_MAX, MAX_REQUEST, PROGRAM, RETIRE, RUN, RUN_FDS, RUN_INLINE, TAIL};
use crate::child::{io_refusal, ExecImage, Reporter, REFUSED_EXIT};
use crate::nsclone::Stack;
use crate::plan::Profile;
use crate::request::{Refusal, Request, SetUpStep, Status, RULESET_FD, STATUS_FD};
use crate::supervisor::{Answering, Supervision};

/// Where G keeps the write end of its hand-off pipe until `execve` closes it.
const DONE_FD: RawFd = 3;
/// Where G finds its end of the exec-notification channel, if the run has one.
const NOTIFY_FD: RawFd = STATUS_FD + 1;

/// A run whose request is still arriving (its pipe's read end is the key), or that came whole
/// in its message.
struct Pending {
    /// stdin, stdout, stderr.
    channels: Vec<OwnedFd>,
    /// The request pipe, for a request too large for the message ([`super::INLINE_MAX`]).
    request: Option<OwnedFd>,
    report: OwnedFd,
    /// The run's prepared Landlock ruleset ([`crate::slots`]), when the message had a seventh
    /// descriptor.
    ruleset: Option<OwnedFd>,
    bytes: Vec<u8>,
    floor: bool,
}
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
    /// The run's socket: its status records, and Z's report at its end.
    report: OwnedFd,
    listener: Option<OwnedFd>,
    supervision: Supervision,
    deadline: Option<Instant>,
    timed_out: bool,
    /// G's wait status, once reaped; from then on the run waits for its group to be empty.
    ended: Option<i32>,
    /// When the wait for the group gives up (see [`DRAIN_LIMIT`]).
    drain_until: Option<Instant>,
    /// Whether the group was empty when the run was reported: only then is every process of
    /// the run gone (the client reuses the run's scratch directory only then).
    drained: bool,
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

/// Ends the zygote without running exit handlers or thread-local destructors: a zygote forked
/// from its agent ([`super::client::Origin::Fork`]) holds the agent's, which are not its own
/// (a destructor dropping a descriptor the zygote closed at its start aborts the process).
fn quit(code: i32) -> ! {
    // SAFETY: ends the process.
    unsafe { libc::_exit(code) }
}

/// Runs the zygote; never returns. Started by [`start`] with its control socket on
/// [`CONTROL_FD`] and /dev/null on 0-2.
pub(crate) fn serve() -> ! {
    // Only 0-2 and the control socket survive: the starter may have leaked others.
    // SAFETY: plain syscalls on fd numbers and integers.
    unsafe {
        if libc::fcntl(CONTROL_FD, libc::F_GETFD) < 0 {
            // Started by hand, without a control socket: nothing to serve.
            quit(crate::child::REFUSED_EXIT);
        }
        libc::syscall(libc::SYS_close_range, CONTROL_FD as u32 + 1, u32::MAX, 0u32);
        libc::fcntl(CONTROL_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) != 0 {
            quit(crate::child::REFUSED_EXIT);
        }
    }
    crate::child::lock_for_children();
    // SAFETY: fd 3 is the control socket handed over by the starter, owned from here on.
    let control = unsafe { OwnedFd::from_raw_fd(CONTROL_FD) };
    let sigchld = block_signals();
    // What the zygote ignores (SIGPIPE, as every Rust program; what the agent ignored when it
    // started the zygote) would stay ignored in every command: G gives each its default
    // action, as the strict child does, in a few calls instead of one per signal.
    IGNORED.store(
        crate::nsclone::ignored_signals(),
        std::sync::atomic::Ordering::Relaxed,
    );
    let stack = Stack::new().unwrap_or_else(|_| quit(1));
    // One buffer for every control message: a run's request travels in it when it fits.
    let mut message = vec![0u8; 4 + INLINE_MAX];
    let mut held = Held::default();
    let mut served = false;
    let mut runs: HashMap<libc::pid_t, Run> = HashMap::new();
    let mut pending: HashMap<RawFd, Pending> = HashMap::new();
    let mut watched: Vec<Watched> = Vec::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    let mut retiring = false;
    loop {
        if retiring && runs.is_empty() && pending.is_empty() {
            // Retired by the agent, which started another zygote: nothing is left to serve.
            quit(0);
        }
        fds.clear();
        watched.clear();
        for fd in [control.as_raw_fd(), sigchld.as_raw_fd()] {
            fds.push(pollin(fd));
        }
        for &fd in pending.keys() {
            fds.push(pollin(fd));
            watched.push(Watched::Request(fd));
        }
        for (&pid, run) in &runs {
            if let Some(l) = &run.listener {
                fds.push(pollin(l.as_raw_fd()));
                watched.push(Watched::Listener(pid));
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
        for (p, &what) in fds[2..].iter().zip(&watched) {
            if p.revents == 0 {
                continue;
            }
            match what {
                Watched::Listener(pid) => {
                    if let Some(run) = runs.get_mut(&pid) {
                        serve_listener(pid, run, p.revents);
                        meter.charge(run);
                    }
                }
                Watched::Request(fd) => {
                    if let Some(run) = read_request(fd, &mut pending) {
                        start_run(run, (&stack, &held), &mut runs, &mut meter);
                    }
                }
            }
        }
        enforce_deadlines(&mut runs, &mut meter);
        finish_drained(&mut runs, &mut meter);
        if fds[0].revents != 0 {
            match crate::fdpass::recv_msg(control.as_fd(), &mut message, RUN_FDS + 1) {
                // The agent is gone: so are its runs.
                Ok((0, _)) => end_all(&mut runs),
                Ok((4, fds)) if fds.is_empty() && &message[..4] == RETIRE => retiring = true,
                Ok((n, fds)) if n >= 4 && fds.is_empty() && &message[..4] == PROGRAM => {
                    // Only as the first message: runs already served forked before it.
                    if !served && held.words.is_none() && (n - 4) % 8 == 0 {
                        let words: Vec<u64> = message[4..n]
                            .chunks_exact(8)
                            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
                            .collect();
                        held.installed = run_under(&words);
                        held.words = Some(words);
                    }
                }
                Ok((n, fds)) if n >= 4 && fds.is_empty() && &message[..4] == TAIL => {
                    // Only right after the program, before any run. Kept even where Z could not
                    // run under the program: the requests leave the tail out all the same.
                    if !served && held.words.is_some() && held.tail.is_none() && (n - 4) % 8 == 0 {
                        let words: Vec<u64> = message[4..n]
                            .chunks_exact(8)
                            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
                            .collect();
                        held.sealed = held.installed.then(|| run_under_tail(&words)).flatten();
                        held.tail = Some(words);
                    }
                }
                Ok((n, fds)) if n >= 4 => {
                    let brought = match &message[..4] {
                        k if k == RUN && n == 4 => Some(Brought::Piped),
                        k if k == FLOOR && n == 4 => Some(Brought::Floor),
                        k if k == RUN_INLINE => Some(Brought::Inline(message[4..n].to_vec())),
                        _ => None,
                    };
                    // The request pipe is the one descriptor an inline run does not send.
                    let expected = match brought {
                        Some(Brought::Inline(_)) => RUN_FDS - 1,
                        _ => RUN_FDS,
                    };
                    match brought {
                        Some(brought) if (expected..=expected + 1).contains(&fds.len()) => {
                            served = true;
                            receive_run(
                                fds,
                                brought,
                                &mut pending,
                                (&stack, &held),
                                &mut runs,
                                &mut meter,
                            )
                        }
                        // Not a run of this version: its descriptors close as they drop, and
                        // the client sees the run socket end without G's pidfd.
                        _ => {}
                    }
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

/// What a polled descriptor past the control socket and the signalfd belongs to.
#[derive(Clone, Copy)]
enum Watched {
    /// A run's exec-notification listener, by G's pid.
    Listener(libc::pid_t),
    /// A request pipe of a run about to start.
    Request(RawFd),
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
            quit(1);
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

/// How a run's message brings its request.
enum Brought {
    /// In the message itself ([`super::RUN_INLINE`]): the run starts at once.
    Inline(Vec<u8>),
    /// On a pipe, the fourth descriptor ([`super::RUN`]): read as it arrives (never blocking
    /// the loop), and the run starts once it is whole.
    Piped,
    /// None: the bench's floor, which starts at once (its empty request pipe is closed).
    Floor,
}

/// A run's message.
fn receive_run(
    fds: Vec<OwnedFd>,
    brought: Brought,
    pending: &mut HashMap<RawFd, Pending>,
    starter: Starter<'_>,
    runs: &mut HashMap<libc::pid_t, Run>,
    meter: &mut Meter,
) {
    let mut fds = fds.into_iter();
    let channels: Vec<OwnedFd> = fds.by_ref().take(3).collect();
    let request = match brought {
        Brought::Piped | Brought::Floor => fds.next(),
        Brought::Inline(_) => None,
    };
    let Some(report) = fds.next() else { return };
    let ruleset = fds.next();
    let mut run = Pending {
        channels,
        request: None,
        report,
        ruleset,
        bytes: Vec::new(),
        floor: matches!(brought, Brought::Floor),
    };
    match (brought, request) {
        (Brought::Piped, Some(pipe)) => {
            let key = pipe.as_raw_fd();
            // SAFETY: O_NONBLOCK on our own end of the request pipe (the client holds only
            // the other).
            unsafe { libc::fcntl(key, libc::F_SETFL, libc::O_NONBLOCK) };
            run.request = Some(pipe);
            pending.insert(key, run);
        }
        (Brought::Inline(bytes), _) => {
            run.bytes = bytes;
            start_run(run, starter, runs, meter);
        }
        (Brought::Floor, _) => start_run(run, starter, runs, meter),
        (Brought::Piped, None) => {}
    }
}

/// Reads what arrived on a request pipe; the run, once its request is whole.
fn read_request(fd: RawFd, pending: &mut HashMap<RawFd, Pending>) -> Option<Pending> {
    let run = pending.get_mut(&fd)?;
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // SAFETY: reading into a local buffer.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n > 0 && run.bytes.len() < MAX_REQUEST {
            run.bytes.extend_from_slice(&chunk[..n as usize]);
            continue;
        }
        if n < 0 && errno().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n < 0 && errno().kind() == std::io::ErrorKind::WouldBlock {
            return None;
        }
        // End of file (or an error, or more than a request can be: parsed as it is, it fails).
        return pending.remove(&fd);
    }
}

/// Everything G reads, in Z's memory, which it shares until `execve`.
struct Start<'a> {
    /// `None` for the bench's floor.
    work: Option<(&'a Request, &'a ExecImage)>,
    /// stdin, stdout, stderr, the status channel (the run's socket), the hand-off pipe's write
    /// end, the notification channel (or -1), the prepared ruleset (or -1).
    fds: [RawFd; 7],
    zygote: libc::pid_t,
    /// The registers of the tail Z runs under ([`Held::sealed`]), which G's `setpgid` must
    /// carry.
    sealed: Option<[u64; 3]>,
}

/// Parses the run's request, starts G (see the module documentation), waits for its
/// `execve`, and keeps the run.
/// What starts G: its stack, and the program Z holds, which G inherits.
type Starter<'a> = (&'a Stack, &'a Held);

/// The seccomp program this zygote serves ([`super::PROGRAM`]): its words, which the runs'
/// requests leave out, and whether Z runs under it (unless the kernel refused); and the tail
/// it holds ([`super::TAIL`]): its words, unsealed, and the registers of the secret Z sealed
/// its own copy with, once Z runs under it.
#[derive(Default)]
struct Held {
    words: Option<Vec<u64>>,
    installed: bool,
    tail: Option<Vec<u64>>,
    sealed: Option<[u64; 3]>,
}

fn start_run(
    run: Pending,
    (stack, held): Starter<'_>,
    runs: &mut HashMap<libc::pid_t, Run>,
    meter: &mut Meter,
) {
    let Pending {
        channels,
        request,
        report,
        ruleset,
        bytes,
        floor,
    } = run;
    drop(request);
    let status = Reporter(report.as_raw_fd());
    let refuse = |why: Refusal| {
        // Before G exists: the client reads it once the run's socket closes without a pidfd.
        status.report(&Status::SetUp(why));
    };
    let bad_request = |why: String| refuse(Refusal::new(SetUpStep::Request, why));
    let parsed = if floor {
        None
    } else {
        let mut req: Request = match serde_json::from_slice(&bytes) {
            Ok(r) => r,
            Err(e) => {
                return bad_request(format!(
                    "invalid spawn request (sandbox helper from another version?): {e}"
                ))
            }
        };
        if req.ruleset_fd.is_some() != ruleset.is_some() {
            return bad_request(
                "the run's prepared Landlock ruleset and its request disagree (sandbox helper \
                 from another version?)"
                    .into(),
            );
        }
        if req.profile != Profile::Hardened {
            return bad_request("the zygote serves the hardened profile only (strict runs are spawned directly); is the helper from another version?".into());
        }
        // The client leaves out the program its zygote was started with (only a split
        // filter's), and the tail too when the zygote holds one.
        if req.filters.program.is_empty() {
            let held_tail = held.tail.as_ref().filter(|_| req.filters.tail.is_empty());
            match (&held.words, held_tail) {
                (Some(words), Some(tail)) => {
                    req.filters.program = words.clone();
                    req.filters.tail = tail.clone();
                }
                (Some(words), None) if !req.filters.tail.is_empty() => {
                    req.filters.program = words.clone()
                }
                _ => {
                    return bad_request(
                        "the run's request leaves out its seccomp program or tail and this \
                         zygote holds none (a bug in toolpolicy's sandbox; please report it \
                         with the policy)"
                            .into(),
                    )
                }
            }
        }
        let split = !req.filters.tail.is_empty();
        let image = match ExecImage::new(&req) {
            Ok(i) => i,
            Err(e) => return bad_request(e),
        };
        // G runs under Z's program from its start: it installs at most the tail, and only when
        // the request's program is that one (otherwise the whole filter, itself).
        let inherited =
            split && held.installed && held.words.as_ref() == Some(&req.filters.program);
        image.filter_inherited.set(inherited);
        if let Some(registers) = held.sealed {
            // G runs under Z's tail whatever the request says, so the request must have that
            // tail, and no listener of its own (one per run, which Z's tail cannot have).
            if !inherited || req.exec_notify || held.tail.as_ref() != Some(&req.filters.tail) {
                return bad_request(
                    "the run's seccomp tail is not the one this zygote runs under (a bug in \
                     toolpolicy's sandbox; please report it with the policy)"
                        .into(),
                );
            }
            image.tail_inherited.set(Some(registers));
        }
        Some((req, image))
    };
    drop(bytes);
    let exec_notify = parsed.as_ref().is_some_and(|(r, _)| r.exec_notify);
    let pair = if exec_notify {
        match crate::fdpass::socketpair(libc::SOCK_SEQPACKET) {
            Ok(pair) => Some(pair),
            Err(e) => {
                return refuse(io_refusal(
                    SetUpStep::Start,
                    "exec notification channel",
                    &e,
                ))
            }
        }
    } else {
        None
    };
    let (done_r, done_w) = match crate::spawn::pipe() {
        Ok(pipe) => pipe,
        Err(e) => return refuse(io_refusal(SetUpStep::Start, "hand-off pipe", &e)),
    };
    let mut supervision = parsed
        .as_ref()
        .map(|(r, _)| Supervision::for_request(r))
        .unwrap_or_default();
    let timeout = parsed
        .as_ref()
        .and_then(|(r, _)| r.timeout_ms)
        .map(Duration::from_millis);
    let now = Instant::now();
    let deadline = timeout.map(|t| now + t);
    // Killing G while it holds a lock of the shared allocator would leave that lock taken in
    // Z for good: the set-up is ended no earlier than the strict child's grace period, and
    // never left to hang Z (a run without a timeout gets the start timeout).
    let set_up_deadline = deadline
        .unwrap_or(now + super::START_TIMEOUT)
        .max(now + crate::nsclone::SET_UP_GRACE);
    let start = Start {
        work: parsed.as_ref().map(|(r, i)| (r, i)),
        fds: [
            channels[0].as_raw_fd(),
            channels[1].as_raw_fd(),
            channels[2].as_raw_fd(),
            report.as_raw_fd(),
            done_w.as_raw_fd(),
            pair.as_ref().map_or(-1, |(_, g)| g.as_raw_fd()),
            ruleset.as_ref().map_or(-1, |r| r.as_raw_fd()),
        ],
        // SAFETY: getpid takes nothing.
        zygote: unsafe { libc::getpid() },
        sealed: held.sealed,
    };
    let mut pidfd: RawFd = -1;
    // SAFETY: G runs `g_main` on its own stack with `start`, which outlives the hand-off below;
    // from here until the hand-off ends this thread makes only system calls into stack buffers.
    let pid = unsafe {
        libc::clone(
            g_main,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_PIDFD | libc::SIGCHLD,
            (&start as *const Start<'_>).cast_mut().cast(),
            &mut pidfd as *mut RawFd,
        )
    };
    if pid < 0 {
        return refuse(Refusal::last_os(
            SetUpStep::Start,
            "starting the command's process",
        ));
    }
    // G holds its own copies; ours would keep the hand-off pipe from reaching end of file.
    drop(done_w);
    let notify = pair.map(|(z, g)| {
        drop(g);
        z
    });
    let handed = crate::nsclone::hand_off(
        pid,
        pidfd,
        done_r.as_raw_fd(),
        notify.as_ref().map(|n| n.as_raw_fd()),
        Some(set_up_deadline),
        &mut supervision,
    );
    // G executed the command or ended: from here Z's memory is its own again.
    // `start` stays in place (and in use) to here, past the end of the hand-off.
    std::hint::black_box(&start);
    drop((done_r, notify, parsed, ruleset));
    drop(channels);
    let mut run = Run {
        // SAFETY: CLONE_PIDFD stored a new descriptor that we own.
        pidfd: unsafe { OwnedFd::from_raw_fd(pidfd) },
        report,
        listener: handed.listener,
        supervision,
        deadline,
        timed_out: handed.timed_out && deadline.is_some_and(|d| Instant::now() >= d),
        ended: None,
        drain_until: None,
        drained: false,
        used: Duration::ZERO,
        cpu: Duration::ZERO,
    };
    meter.charge(&mut run);
    runs.insert(pid, run);
}

/// Sets NO_NEW_PRIVS and installs `program` on Z itself; `false` when the kernel refuses (the
/// commands then install the whole filter). Z's own system calls allow it: it makes no
/// namespace, mount, ptrace or metadata change, and its sockets are unix stream or
/// sequenced-packet pairs.
fn run_under(program: &[u64]) -> bool {
    // SAFETY: prctl with integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return false;
    }
    crate::seccomp::install(&crate::seccomp::unpack(program), false).is_ok()
}

/// Seals `tail` with a secret drawn once for this zygote and installs it on Z, under the
/// program ([`run_under`]); the secret's registers, or `None` when it could not (then each G
/// installs its own tail, sealed with a secret of its run). Z's own system calls pass it: it
/// calls neither `setsid`, `setpgid` nor `execve`.
fn run_under_tail(tail: &[u64]) -> Option<[u64; 3]> {
    let mut tail = crate::seccomp::unpack(tail);
    let secret = crate::seccomp::draw_secret().ok()?;
    if !crate::seccomp::seal(&mut tail, &secret) {
        return None;
    }
    crate::seccomp::install(&tail, false).ok()?;
    Some(crate::seccomp::secret_registers(&secret))
}

/// G's entry on its own stack. Never returns: it executes the command, or reports and exits.
extern "C" fn g_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the Start that `start_run` keeps alive until the hand-off ends.
    let start = unsafe { &*(arg as *const Start<'_>) };
    // A panic must not unwind into `clone`'s frame, which does not exist on this stack.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| become_g(start)));
    Reporter(start.fds[3]).fail(Refusal::new(
        SetUpStep::Internal,
        "the sandbox's command process panicked while setting up (a bug in toolpolicy's \
         sandbox; please report it with the policy)",
    ))
}

/// The signals Z ignores, which G's command must not ([`serve`]).
static IGNORED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// In G: the parent-death signal, the default action of every signal Z ignores, a process
/// group of its own, its pidfd to the client on the run's socket (before anything can run, so
/// that a zygote that dies earlier started nothing), stdio on 0-2, the run's socket as the
/// status channel on [`STATUS_FD`], the hand-off pipe on [`DONE_FD`], the notification channel
/// on [`NOTIFY_FD`], nothing else; then [`crate::child::start_hardened`].
fn become_g(start: &Start<'_>) -> ! {
    let refuse = |what: &str| Reporter(start.fds[3]).fail(Refusal::last_os(SetUpStep::Start, what));
    // SAFETY: prctl, process group, pidfd and descriptor calls on our own process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != start.zygote {
            libc::_exit(REFUSED_EXIT);
        }
        let ignored = IGNORED.load(std::sync::atomic::Ordering::Relaxed);
        for signal in (1..=64).filter(|s| ignored >> (s - 1) & 1 == 1) {
            crate::nsclone::set_default_action(signal);
        }
        // Z kills the run's group, so G must lead one before anything runs: never the
        // agent's, which it would otherwise be in.
        let grouped = match start.sealed {
            // Z's tail admits G's setpgid by Z's secret (the command never learns it).
            Some(registers) => crate::seccomp::setpgid_sealed(registers),
            None => libc::setpgid(0, 0) as libc::c_long,
        };
        if grouped != 0 {
            refuse("a process group for the command");
        }
        let own = libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) as RawFd;
        if own < 0 {
            refuse("pidfd_open");
        }
        let sent = crate::fdpass::send_one(
            BorrowedFd::borrow_raw(start.fds[3]),
            BorrowedFd::borrow_raw(own),
        );
        libc::close(own);
        if sent.is_err() {
            // The client is gone or cannot kill the run: nothing may start.
            libc::_exit(REFUSED_EXIT);
        }
        // Above every target first, so that no dup2 overwrites a source.
        let mut high = [-1; 7];
        for (slot, &fd) in high.iter_mut().zip(&start.fds) {
            if fd >= 0 {
                *slot = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
                if *slot < 0 {
                    libc::_exit(REFUSED_EXIT);
                }
            }
        }
        let targets = [0, 1, 2, STATUS_FD, DONE_FD, NOTIFY_FD, RULESET_FD];
        for (&fd, &target) in high.iter().zip(&targets) {
            if fd >= 0 && libc::dup2(fd, target) < 0 {
                libc::_exit(REFUSED_EXIT);
            }
        }
        libc::syscall(libc::SYS_close_range, RULESET_FD as u32 + 1, u32::MAX, 0u32);
        if start.fds[5] < 0 {
            libc::close(NOTIFY_FD);
        }
        if start.fds[6] < 0 {
            libc::close(RULESET_FD);
        }
        for fd in [STATUS_FD, DONE_FD, RULESET_FD] {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    match start.work {
        Some((req, image)) => {
            let notify = (start.fds[5] >= 0).then_some(NOTIFY_FD);
            crate::child::start_hardened(req, image, notify)
        }
        None => Reporter(STATUS_FD).fail(Refusal::new(
            SetUpStep::Request,
            "nothing to run: the zygote's round trip alone",
        )),
    }
}

/// A run's exec-notification listener is readable (or hung up).
fn serve_listener(pid: libc::pid_t, run: &mut Run, revents: i16) {
    let hung_up = revents & (libc::POLLHUP | libc::POLLERR) != 0 && revents & libc::POLLIN == 0;
    if hung_up {
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
        }
        meter.charge(run);
    }
}

/// Reports every ended run whose group is empty (or that waited [`DRAIN_LIMIT`] for it).
fn finish_drained(runs: &mut HashMap<libc::pid_t, Run>, meter: &mut Meter) {
    let now = Instant::now();
    let mut done: Vec<libc::pid_t> = Vec::new();
    for (&pid, run) in runs.iter_mut() {
        if run.ended.is_none() {
            continue;
        }
        run.drained = kill_group(run.pidfd.as_fd(), None) == Group::Empty;
        if run.drained || run.drain_until.is_some_and(|t| now >= t) {
            done.push(pid);
        }
    }
    for pid in done {
        if let Some(mut run) = runs.remove(&pid) {
            meter.charge(&mut run);
            report(run);
        }
    }
}

/// Z's report on the run's socket, which closes with it: the CPU time, then the run's final
/// status record (the command's exit, as its wait status says), in one message.
fn report(run: Run) {
    let status = run.ended.unwrap_or(0);
    let (code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else {
        (None, Some(libc::WTERMSIG(status)))
    };
    let mut record = Vec::with_capacity(ENDED_LEN + 64);
    record.extend_from_slice(ENDED);
    record.extend_from_slice(&status.to_le_bytes());
    record.extend_from_slice(&(run.used.as_nanos() as u64).to_le_bytes());
    record.extend_from_slice(&(run.cpu.as_nanos() as u64).to_le_bytes());
    record.push(u8::from(run.drained));
    let exited = Status::Exited {
        code,
        signal,
        timed_out: run.timed_out,
    };
    // Serializing a record of integers and flags cannot fail.
    let _ = serde_json::to_writer(&mut record, &exited);
    record.push(b'\n');
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
            quit(0);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
