//! The hardened profile's zygote: one small helper process per agent process, helper binary
//! and seccomp program, started once, that starts and supervises the command of every
//! hardened run whose filter has that program.
//!
//! Starting the helper binary for each run (`posix_spawn`, the dynamic loader, the Rust
//! runtime) cost more than the whole plain spawn it is compared with. The zygote pays that once;
//! each run then costs one `clone` that shares the zygote's memory until the command's
//! `execve` (no page table copied or torn down), and that process becomes the command.
//!
//! Loading the seccomp program was the largest single step of a command's set-up (the kernel
//! translates the program, compiles it and runs it for every syscall number to build its
//! allow cache; the bench's floor puts it at 0.13–0.17 × a plain spawn). A filter is shared,
//! not copied, by every process forked under it. So Z installs the policy's program
//! ([`crate::seccomp::Filters::program`]) on itself once, as its first message (`PROGRAM`)
//! tells it, and then, as its second (`TAIL`), the tail of a few instructions
//! ([`crate::seccomp::Filters::tail`]), sealed with a secret Z draws once: loading even that
//! tail per run cost about 0.05 × a plain spawn (`sandbox/PERFORMANCE.md`). Each G inherits
//! both and installs nothing; it passes Z's secret to its `setpgid` and to the command's
//! `execve`. A tail that needs a listener (one per run: an interpreter chain's relays, whose
//! later `execve` calls Z answers) is not sent, and each G installs it, sealed with a secret of its
//! run. The registry keys zygotes by helper, program and tail (the profile's options make
//! few), and the requests leave the program out. Z's own system calls pass both: it makes no
//! namespace, mount, ptrace or metadata change, its sockets are unix pairs, it sets no other
//! process's limits, and it calls neither `setsid`, `setpgid` nor `execve`. A kernel that
//! refuses the program leaves Z unfiltered, and its commands install the whole filter
//! themselves.
//!
//! ```text
//! agent ──posix_spawn of the helper, at the first hardened run of a program (a one-shot
//!   caller of one thread: fork, see below)──▶ Z: child subreaper,
//!   NO_NEW_PRIVS, the program and the tail sealed with Z's secret (its first two messages),
//!   single-threaded poll loop over its control socket (SOCK_SEQPACKET), a SIGCHLD signalfd,
//!   the request pipes of runs about to start and the exec-notification listeners of runs in
//!   flight, with the nearest deadline of all runs as its timeout
//! per run: agent ──one message: the request (JSON), stdin, stdout, stderr, run socket──▶ Z;
//!   a request over 60 KiB comes on a pipe of its own instead, which Z reads as it comes
//!   Z parses it and builds the program's image, then ──clone(CLONE_VM), own stack──▶ G:
//!   parent-death signal, new process group (setpgid(0, 0) with Z's secret, same session),
//!   G's own pidfd on the run socket (before anything can run), the agent's umask, cgroups →
//!   capabilities dropped → NO_NEW_PRIVS → Landlock → rlimits (the agent's, then the
//!   policy's) → (only where Z holds no tail: the tail, sealed with the run's secret) →
//!   execve with the secret, the one the tail admits under exec = deny (see
//!   [`crate::seccomp::Filters`]; [`crate::child`])
//!   Z waits for that execve (nsclone's hand-off: system calls only), then answers the exec
//!   notifications of an interpreter chain's relays, if it has any, kills G's group at the
//!   timeout, reaps G (wait4), kills the group until it is empty, reaping the orphans the kernel
//!   hands it (telling their run by their process group), then sends the CPU time and the
//!   final status on the run socket (which carries every status record of the run: Z's refusal
//!   before G, G's before its `execve`), and closes it
//! ```
//!
//! The hardened profile has no pid namespace, so the command's process group is what finds
//! everything it started: the command cannot leave it (its seccomp filter refuses `setsid`,
//! and `setpgid` without the secret, [`crate::seccomp::GROUP_CHANGES`]), and an orphan it
//! leaves becomes Z's child (Z is a child subreaper), whose run `getpgid` on the zombie tells.
//! The group is killed through
//! G's pidfd (`pidfd_send_signal` with `PIDFD_SIGNAL_PROCESS_GROUP`, Linux 6.9): the pidfd pins
//! the group's id, so a reused pid is never hit; and again until the kernel answers `ESRCH`, since
//! a fork racing the kill can add a member. On older kernels the fallback `kill(-pgid)` is used
//! only while G is alive or an unreaped zombie (its pgid cannot be reused then). The command
//! keeps the agent's session (the one of the time of the run: after the agent's `setsid`, a new
//! zygote in the new session serves it), so its controlling terminal is the one it had; its
//! group is not the terminal's foreground group, so reading the terminal stops it (`SIGTTIN`) as
//! it would any background job, and a terminal's Ctrl-C reaches the agent (and Z, which blocks
//! it and ends the runs when the agent ends), not the command.
//!
//! Lifetime and failure, each tested in `tests/zygote.rs`:
//! * Z ends at end-of-file on its control socket, i.e. when the agent process is gone (its
//!   end is close-on-exec, so programs the agent starts do not hold it), after killing the
//!   group of every run in flight. Nothing ties Z to the thread that started it: that thread
//!   may end. Z blocks the terminal's signals (interrupt, hang-up, quit, stop) and SIGTERM, so
//!   a Ctrl-C that ends the agent leaves Z to clean up; G empties its mask before `execve`.
//! * A Z killed from outside (SIGKILL) during a run: G dies with it (parent-death signal), and
//!   the client, which sees the run socket's end without a report, kills G's group itself with
//!   the pidfd Z sent it; the run fails with [`crate::runner::RunError::Helper`], never a
//!   made-up result. Only when the agent and Z are killed at the same instant (one signal to
//!   both from outside) can the command's descendants outlive them.
//! * A Z that died is noticed before the next run (its pidfd), or when the run's message finds
//!   no reader, and a new one is started; the run is retried once only when G's pidfd never
//!   came, which G sends before it does anything else: nothing ran.
//! * Z is parked while a G sets itself up (they share memory): other runs' notifications and
//!   deadlines wait that long. A set-up still running at the run's timeout (without one, at the
//!   start timeout of 10 s), and at least 5 s after its start, is killed: G is then blocked in
//!   a system call, not holding a lock of the shared allocator.
//! * A process forked from the agent (without `exec`) runs its hardened tools through a zygote
//!   of its own: the registry remembers which process it belongs to. A `fork` handler closes
//!   the agent's control sockets in the child, so a forked child that lives on does not keep
//!   the agent's zygote (and its runs) alive after the agent's death.
//! * [`crate::confine::confine_self`] ends the zygotes first ([`shut_down`]): one started
//!   before would be an unconfined server the confined process could still use. Likewise a
//!   run from an agent whose user, group or supplementary group ids, NO_NEW_PRIVS or seccomp
//!   mode changed since its zygote started gets a new zygote (one started as root, or in a
//!   group, must not serve an agent that dropped root or the group); so does a run from an
//!   agent that confined itself further by other means: another seccomp filter, a Landlock
//!   domain, another mount namespace or root directory (`chroot`), another network namespace,
//!   or a new pid namespace for its children, or memory-deny-write-execute (`inherit`'s
//!   `Confinement`, and the client's domain check: a Landlock domain is seen where the agent
//!   could inspect its zygote at the zygote's start, with `kcmp` or, where a filter refuses
//!   that, through the zygote's `/proc/PID/ns/net`; i.e. unless the agent holds fewer
//!   capabilities than a program it starts gets, or has neither `kcmp` nor `/proc`; there
//!   call [`shut_down`] after entering one). Seccomp filters are compared by their number,
//!   all the kernel shows: two threads of one agent that each installed a different filter
//!   of their own (without `SECCOMP_FILTER_FLAG_TSYNC`) and so hold as many may share a
//!   zygote; filter every thread alike, or call [`shut_down`] after filtering one. A thread
//!   that cannot read its own `/proc` (confined without it by other means than
//!   `confine_self`, whose hardened rules leave `/proc` readable) cannot name its namespaces,
//!   nor count its filters: each of its runs starts a new zygote, where it has namespaces to
//!   change or runs under a filter. A zygote
//!   a more confined thread started serves a less confined one (it may inspect the zygote):
//!   that thread's commands are then refused more, never less. After an agent's
//!   `unshare(CLONE_NEWPID)`, the zygote its next run starts is the new pid namespace's init:
//!   when that zygote is retired (a later change that needs another), the namespace ends with
//!   it, and later runs fail as the agent's own plain children then do (the kernel refuses
//!   new processes in a namespace whose init ended), as after any first child's end.
//! * The command starts with the agent's umask, resource limits, scheduling policy, nice
//!   value, CPU affinity, I/O priority, timer slack, OOM score adjustment, personality and
//!   cgroups of the time of the run, as a strict run's would, not those of the zygote's start
//!   (`inherit`): a change G can follow travels with the run and G applies it; one it might
//!   lack the privilege for (a raised hard limit, a lowered nice value or OOM score, leaving
//!   `SCHED_IDLE`, taking real time or the real-time I/O class), another cgroup, other flags
//!   that an `execve` keeps (transparent huge pages disabled, memory merging and the core dump
//!   filter, of the address space G shares with Z until its `execve`; the thread's speculation
//!   mitigations and NUMA memory policy), another session, or another audit login uid and
//!   session gets a new zygote, and the old one is retired: it ends once the runs it received
//!   are over.
//!
//! A caller of one run ([`crate::runner::RunOptions::one_shot`], as `policy-sandbox run`) would
//! pay the helper binary's start (its loading, relocation and runtime, about 1.6 plain spawns
//! of CPU) for that run alone. When it has one thread and at most 16 MiB resident, Z is instead
//! a `fork` of it that serves as the helper would: 0-2 on `/dev/null`, the control socket on
//! descriptor 3, everything else closed, no signal blocked, the caller's signal handlers
//! dropped (its ignored signals kept, as an `execve` keeps them; every signal is blocked
//! across the `fork` until then), and it ends with `_exit`, never running the caller's exit
//! handlers nor returning into its code. A fork is never made from a
//! process of several threads (it could inherit a lock another thread held), nor from a larger
//! one (copying its page tables costs more than the helper's start: about 11 ms for 256 MiB),
//! nor for an agent of many runs, whose memory, and whatever secrets it holds, Z would keep a
//! copy of for its whole life. The fork's
//! copy is out of the commands' reach as the helper's memory is: Landlock refuses a command
//! ptrace access (`/proc/PID/mem`, `environ`) to Z, outside its domain, and the filter refuses
//! `process_vm_readv` (`tests/one_shot.rs`, which also tells the two origins apart by Z's
//! command line). `tests/zygote.rs` shows the size limit (a caller with 64 MiB resident gets
//! the helper) and that a forked Z exits with status 0 without running its caller's exit
//! handlers; `exit` in place of `_exit` ran the caller's thread-local destructors there, which
//! dropped descriptors Z had closed, and Z aborted. It also shows that a signal sent to a
//! forked Z runs none of the caller's handlers (with them kept, its handler ran in Z).
//!
//! CPU time: G and its orphans are Z's children, not the caller's, so Z reports G's rusage (its
//! waited-for children included), the rusage of every orphan of the run it reaped, and its own
//! time spent on the run (reading and parsing the request, the hand-off, the supervision, the
//! report); the runner returns the sum as [`crate::runner::RunOutput::helper_cpu`]. The zygote's
//! start is paid once per agent process: its securebits and empty bounding set, which every G
//! inherits, are set then (`crate::child`).

mod client;
mod inherit;
mod server;

use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

pub use client::{floor_round_trip, running, shut_down};
pub(crate) use client::{kill_run, read_report, spawn, Origin, Report};
pub(crate) use server::serve;

/// Z's control socket.
const CONTROL_FD: RawFd = 3;
/// A run's message whose request comes on a pipe (the fourth descriptor): this payload with
/// five descriptors ([`RUN_FDS`]), or six: the sixth is the run's prepared Landlock ruleset
/// ([`crate::slots`]), which G gets as [`crate::request::RULESET_FD`]. For requests larger
/// than [`INLINE_MAX`].
const RUN: &[u8; 4] = b"ZRN3";
/// A run's message whose request (JSON) follows the kind in the message itself, with four
/// descriptors (no request pipe), or five with the ruleset. Against [`RUN`], each run makes one
/// pipe fewer, and the zygote makes four system calls fewer (the pipe's reads to its end,
/// `O_NONBLOCK`, its close) and no second pass of its loop for the request.
const RUN_INLINE: &[u8; 4] = b"ZRI2";
/// The largest request that travels in its run's message ([`RUN_INLINE`]).
const INLINE_MAX: usize = 60 * 1024;
/// The zygote's first message when it serves one seccomp program: this, then the program's
/// words (`u64`, little-endian). The zygote sets NO_NEW_PRIVS and installs the program on
/// itself; every G it forks inherits it, and installs at most its tail
/// ([`crate::seccomp::Filters::tail`]) when its request's program is the same.
const PROGRAM: &[u8; 4] = b"ZPG1";
/// The zygote's second message when its runs' tails need no listener: this, then the tail's
/// words, unsealed. A zygote that runs under the program seals the tail with a secret it
/// draws once and installs it on itself too; every G it forks then installs nothing, and
/// passes that secret to its `setpgid` and `execve` ([`crate::seccomp::Filters::tail`]).
const TAIL: &[u8; 4] = b"ZTL1";
/// The bench's floor ([`floor_round_trip`]): a run without a request, whose G ends right after
/// its start.
const FLOOR: &[u8; 4] = b"ZFL3";
/// The agent started another zygote (see [`inherit`]): this one ends once the runs it
/// received are over. No descriptor.
const RETIRE: &[u8; 4] = b"ZRT1";
/// stdin, stdout, stderr, request (read end), the run's socket. The run's status records
/// travel on that socket: one message each ([`crate::child::Reporter`]), from Z before it
/// starts G, from G before its `execve`, and Z's final one inside [`ENDED`]; a pipe of their
/// own cost each run a pipe made, passed and closed.
const RUN_FDS: usize = 5;
/// Z's report of G's end: this, G's wait status (`i32`), the CPU of G and of the run's orphans,
/// and Z's CPU for the run (`u64` nanoseconds), little-endian, then whether the run's group was
/// empty (one byte, 1 or 0); then the run's final status record (a JSON line).
const ENDED: &[u8; 4] = b"ZEN4";
/// The length of [`ENDED`]'s fixed part.
const ENDED_LEN: usize = 4 + 4 + 8 + 8 + 1;
/// The longest status record a client reads from a run's socket; a longer one is cut short
/// and read as a refusal of its own.
const MAX_RECORD: usize = 16 * 1024;
/// How long a live zygote may take to start G before the run is refused.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request the zygote reads.
const MAX_REQUEST: usize = 64 << 20;
/// `pidfd_send_signal`'s flag that signals the process group the pidfd's process leads
/// (Linux 6.9).
const PIDFD_SIGNAL_PROCESS_GROUP: u32 = 1 << 2;

/// Whether a process group kill reached anyone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    /// Signalled: it had members (maybe only zombies not yet reaped).
    Signalled,
    /// No member is left (or the group could not be reached, see [`kill_group`]).
    Empty,
}

/// SIGKILL to the process group G leads, through G's pidfd. `pinned`: G's pid, when G is alive
/// or an unreaped zombie of the caller's, so that its number still names its group: the
/// fallback `kill(-pgid)` for kernels without `PIDFD_SIGNAL_PROCESS_GROUP` is used only then
/// (otherwise only G itself is signalled, through the pidfd, and the group counts as empty).
fn kill_group(pidfd: BorrowedFd<'_>, pinned: Option<libc::pid_t>) -> Group {
    // SAFETY: pidfd_send_signal with a null siginfo.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            PIDFD_SIGNAL_PROCESS_GROUP,
        )
    };
    if rc == 0 {
        return Group::Signalled;
    }
    match (errno().raw_os_error(), pinned) {
        (Some(libc::EINVAL), Some(pgid)) if pgid > 0 => {
            // SAFETY: signalling a group whose leader's pid is pinned (see above).
            if unsafe { libc::kill(-pgid, libc::SIGKILL) } == 0 {
                Group::Signalled
            } else {
                Group::Empty
            }
        }
        (Some(libc::EINVAL), None) => {
            client::kill(pidfd);
            Group::Empty
        }
        _ => Group::Empty,
    }
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// This thread's CPU time (Z is single-threaded: its own).
fn thread_cpu() -> Duration {
    // SAFETY: clock_gettime fills a zeroed timespec.
    let ts = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        ts
    };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
