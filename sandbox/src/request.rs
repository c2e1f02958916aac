//! What a sandboxed run is asked to do, and the status records that come back.
//!
//! The strict profile's child reads the [`Request`] in the caller's memory; the hardened
//! profile's zygote receives it as JSON in the run's message (on a pipe of its own when it is
//! larger than 60 KiB), and its G reads it in the zygote's memory. Both report on a status
//! channel (JSON lines of [`Status`]): the strict child on a pipe, the hardened G and its
//! zygote on the run's socket, one record per message.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::egress::EgressPlan;
use crate::landlock_rules::LandlockSpec;
use crate::mounts::MountOp;
use crate::plan::Profile;
use crate::seccomp::Filters;

/// The hardened G's status channel, the run's socket: JSON lines of [`Status`], one per
/// message.
pub const STATUS_FD: i32 = 4;
/// Where the hardened G holds the run's prepared Landlock ruleset, when the run came with one
/// ([`Request::ruleset_fd`]); above G's other channels.
pub const RULESET_FD: i32 = 6;

/// A spawn request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    /// The profile.
    pub profile: Profile,
    /// Absolute path of the program.
    pub program: PathBuf,
    /// argv, bytes.
    pub argv: Vec<Vec<u8>>,
    /// `NAME=value` entries, bytes.
    pub env: Vec<Vec<u8>>,
    /// Working directory (falls back to `/` in strict when not visible).
    pub cwd: Option<PathBuf>,
    /// The strict profile's view.
    pub mounts: Vec<MountOp>,
    /// Landlock rules.
    pub landlock: LandlockSpec,
    /// The descriptor of a Landlock ruleset built from [`Request::landlock`] before the run
    /// (hardened: [`RULESET_FD`], see the crate's `slots` module): the command's process
    /// enforces it instead of building one, and the spec's path rules are then not sent.
    #[serde(default)]
    pub ruleset_fd: Option<i32>,
    /// seccomp programs.
    pub filters: Filters,
    /// Whether the filter has a user-notification listener for the supervisor (exec = deny,
    /// or `connect` supervised: strict with net = deny or a host list).
    pub exec_notify: bool,
    /// Hardened, exec = deny: the command's process seals its tail with a secret of its own
    /// and passes it to its `execve`, which then needs no notification
    /// ([`crate::seccomp::Filters`]); the supervisor counts that `execve` as done.
    #[serde(default)]
    pub exec_secret: bool,
    /// exec = deny: how many `execve` calls the supervisor admits: the command's own, then
    /// the `PATH` search of a relay of its interpreter chain (`#!/usr/bin/env python3`).
    #[serde(default)]
    pub exec_budget: u32,
    /// The relays of the command's interpreter chain, as (device, inode).
    #[serde(default)]
    pub exec_relays: Vec<(u64, u64)>,
    /// `(resource, limit)` pairs for setrlimit.
    pub rlimits: Vec<(u32, u64)>,
    /// What the hardened command takes from the agent at the time of the run where the
    /// zygote it is forked from holds older values (empty for strict runs, whose child has
    /// the agent's own).
    #[serde(default)]
    pub inherited: Inherited,
    /// The run's cgroups (pids, memory) that the root of the tool's tree joins before anything
    /// else.
    pub cgroups: Vec<PathBuf>,
    /// Create a network namespace.
    pub netns: bool,
    /// Bring its loopback up (net = hosts, for the egress listeners). With net = deny it stays
    /// down: nothing, not even 127.0.0.1, is reachable, and no RTNL round trip is paid.
    pub loopback: bool,
    /// Egress plan (net = hosts); the strict child gets the channel's descriptor with it.
    pub egress: Option<EgressPlan>,
    /// Wall-clock limit.
    pub timeout_ms: Option<u64>,
    /// The process G dies with: the zygote that starts it.
    pub parent_pid: i32,
}

/// The agent's umask, resource limits, scheduling policy, nice value, CPU affinity, I/O
/// priority, timer slack, OOM score adjustment and personality at the time of a hardened run, where they differ from the zygote's (which has the agent's of the
/// time it started): the command's process applies them, so that it starts with what a strict
/// run's child, cloned from the agent's calling thread at that moment, would have.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inherited {
    /// The umask, when it differs.
    #[serde(default)]
    pub umask: Option<u32>,
    /// `(resource, soft, hard)` of each limit that differs; never above the zygote's hard
    /// limit (a raised one needs a new zygote). Applied before [`Request::rlimits`], which
    /// then override them.
    #[serde(default)]
    pub rlimits: Vec<(u32, u64, u64)>,
    /// The calling thread's nice value, when it is above the zygote's (a lower one needs a new
    /// zygote: lowering takes a privilege the command's process may lack).
    #[serde(default)]
    pub nice: Option<i32>,
    /// The calling thread's scheduling policy (`SCHED_*`) and real-time priority, when they
    /// differ (one G could only take with a privilege needs a new zygote).
    #[serde(default)]
    pub policy: Option<(i32, i32)>,
    /// The calling thread's I/O priority (`ioprio_get`), when it differs (the real-time class
    /// needs a new zygote).
    #[serde(default)]
    pub ioprio: Option<i32>,
    /// The process's OOM score adjustment, when it is above the zygote's (a lower one needs a
    /// new zygote: lowering takes a privilege).
    #[serde(default)]
    pub oom_score_adj: Option<i32>,
    /// The process's personality (`setarch`), when it differs.
    #[serde(default)]
    pub personality: Option<i32>,
    /// The calling thread's timer slack in nanoseconds, when it differs (and is not 0, as it
    /// is under a real-time policy).
    #[serde(default)]
    pub timer_slack: Option<u64>,
    /// The calling thread's CPU affinity, as the words of its `cpu_set_t`, when it differs.
    #[serde(default)]
    pub affinity: Option<Vec<u64>>,
}

/// The step of the command's set-up, before its `execve`, that a [`Refusal`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SetUpStep {
    /// The run's request could not be read, or does not fit this helper (one of another
    /// version), or holds an argument or environment entry with a NUL byte.
    Request,
    /// Starting the command's process: its channels, `clone`, its process group, its pidfd.
    Start,
    /// Joining the run's cgroups (`limits.max_processes`, `limits.memory_bytes`).
    Cgroups,
    /// Taking the agent's scheduling policy, nice value, CPU affinity, I/O priority, timer
    /// slack, OOM score adjustment and personality (hardened, when they changed since its zygote started).
    Scheduling,
    /// Dropping every capability (securebits, bounding and ambient sets, `capset`).
    Capabilities,
    /// `PR_SET_NO_NEW_PRIVS`.
    NoNewPrivs,
    /// Enforcing the Landlock ruleset.
    Landlock,
    /// Setting the resource limits (the agent's, then the policy's).
    ResourceLimits,
    /// Installing the seccomp filter, or handing its exec listener to the supervisor.
    Seccomp,
    /// The set-up failed in a way that is a bug of the sandbox (it panicked).
    Internal,
}

/// A refusal the command's process reported before its `execve`: which step refused, the OS
/// error where the kernel gave one, and the message for people (what `Display` shows).
///
/// ```
/// use sandbox::request::{Refusal, SetUpStep};
///
/// let r = Refusal::os(SetUpStep::NoNewPrivs, "PR_SET_NO_NEW_PRIVS", libc::EINVAL);
/// assert_eq!(r.step, SetUpStep::NoNewPrivs);
/// assert_eq!(r.os_error().and_then(|e| e.raw_os_error()), Some(libc::EINVAL));
/// assert!(r.to_string().starts_with("PR_SET_NO_NEW_PRIVS: Invalid argument"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    /// The step that refused.
    pub step: SetUpStep,
    /// The `errno` of the call that failed, when one did.
    pub errno: Option<i32>,
    /// What happened, for people.
    pub message: String,
}

impl Refusal {
    /// A refusal without an OS error (or one already told in `message`).
    pub fn new(step: SetUpStep, message: impl Into<String>) -> Refusal {
        Refusal {
            step,
            errno: None,
            message: message.into(),
        }
    }

    /// The call `what` failed with `errno`; the message is `what: <the OS's text>`.
    pub fn os(step: SetUpStep, what: &str, errno: i32) -> Refusal {
        Refusal {
            step,
            errno: Some(errno),
            message: format!("{what}: {}", std::io::Error::from_raw_os_error(errno)),
        }
    }

    /// [`Refusal::os`] with the calling thread's `errno`.
    pub(crate) fn last_os(step: SetUpStep, what: &str) -> Refusal {
        let errno = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        Refusal::os(step, what, errno)
    }

    /// The OS error, when there is one.
    pub fn os_error(&self) -> Option<std::io::Error> {
        self.errno.map(std::io::Error::from_raw_os_error)
    }
}

/// One status record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The sandbox could not be set up; the command did not start. A step that has no
    /// [`Refusal`] of its own yet (the strict profile's namespaces and view), or the caller's
    /// judgement of what came back.
    Refused(String),
    /// A set-up step of the command's process refused; the command did not start.
    SetUp(Refusal),
    /// The command could not be executed (not found, not executable).
    ExecFailed {
        /// The `execve` error number.
        errno: i32,
    },
    /// The command ended.
    Exited {
        /// Exit code, when it exited.
        code: Option<i32>,
        /// Signal, when killed.
        signal: Option<i32>,
        /// Killed at the timeout.
        timed_out: bool,
    },
}
