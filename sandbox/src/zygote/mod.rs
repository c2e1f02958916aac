//! The hardened profile's zygote: one small helper process per agent process (and helper
//! binary), started once, that forks the trampoline of every hardened run.
//!
//! Starting the helper binary for each run (`posix_spawn`, the dynamic loader, the Rust
//! runtime) cost more than the whole plain spawn it is compared with. The zygote pays that once;
//! each run then costs one `fork` of a process of a few megabytes.
//!
//! ```text
//! agent ──posix_spawn, at the first hardened run──▶ Z: child subreaper, single-threaded poll
//!   loop over its control socket (SOCK_SEQPACKET) and a SIGCHLD signalfd
//! per run: agent ──one message: stdin, stdout, stderr, request pipe, status pipe, run socket,
//!   and the run's Landlock ruleset when it has one──▶ Z
//!   Z ──fork──▶ T ([`crate::trampoline`]), then T's pidfd on the run socket
//!   agent writes the request (only now: without T's pidfd, nothing has started)
//!   Z reaps T with wait4 and sends its wait status and CPU time on the run socket, then closes it
//! ```
//!
//! Lifetime and failure, each tested in `tests/zygote.rs`:
//! * Z ends at end-of-file on its control socket, i.e. when the agent process is gone (its
//!   end is close-on-exec, so programs the agent starts do not hold it). Nothing ties Z to the
//!   thread that started it: that thread may end.
//! * T keeps a parent-death signal on Z (single-threaded, so the signal follows the process)
//!   and kills its command's tree when Z dies. Z is itself a child subreaper and kills at once
//!   any process that is not one of its T children (the orphans of a T that was killed).
//! * A Z that died is noticed before the next run (its pidfd), or when the run's message finds
//!   no reader, and a new one is started; the run is retried once only when Z never sent T's
//!   pidfd, so the request was never written and nothing ran. A Z that dies during a run makes
//!   that run fail with [`crate::runner::RunError::Helper`], never report a made-up result.
//! * A process forked from the agent (without `exec`) runs its hardened tools through a zygote
//!   of its own: the registry remembers which process it belongs to. A `fork` handler closes
//!   the agent's control sockets in the child, so a forked child that lives on does not keep
//!   the agent's zygote (and its runs) alive after the agent's death.
//! * [`crate::confine::confine_self`] ends the zygotes first ([`shut_down`]): one started
//!   before would be an unconfined server the confined process could still use. Likewise a
//!   run from an agent whose user or group ids, NO_NEW_PRIVS or seccomp mode changed since
//!   its zygote started gets a new zygote (one started as root must not serve an agent that
//!   dropped root). The zygote also keeps the agent's rlimits, umask and cgroup of the time
//!   it started, and a Landlock domain the agent enters later by other means than
//!   `confine_self` cannot be detected: call [`shut_down`] after such changes.
//!
//! CPU time: T and the command are Z's children, not the caller's, so Z reports T's rusage (the
//! command's included) and its own time spent on the run; the runner returns the sum as
//! [`crate::runner::RunOutput::helper_cpu`].

mod client;
mod server;

use std::os::fd::RawFd;
use std::time::Duration;

pub use client::{floor_round_trip, running, shut_down};
pub(crate) use client::{kill, read_report, spawn};
pub(crate) use server::serve;

/// Z's control socket.
const CONTROL_FD: RawFd = 3;
/// A run's message: this payload with six descriptors ([`RUN_FDS`]), or seven: the seventh is
/// the run's prepared Landlock ruleset ([`crate::slots`]).
const RUN: &[u8; 4] = b"ZRN1";
/// stdin, stdout, stderr, request (read end), status (write end), the run's socket.
const RUN_FDS: usize = 6;
/// Z's report of T's end: this, T's wait status (`i32`), T's CPU and Z's CPU for the run (`u64`
/// nanoseconds), little-endian.
const ENDED: &[u8; 4] = b"ZEN1";
const ENDED_LEN: usize = 4 + 4 + 8 + 8;
/// How long a live zygote may take to fork T before the run is refused.
const START_TIMEOUT: Duration = Duration::from_secs(10);

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
