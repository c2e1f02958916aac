//! The low-level [`run`]: one command under one policy, refused unless the host can enforce
//! the policy under the chosen profile.
//!
//! ```no_run
//! use std::ffi::OsString;
//! use policy_runtime::ToolPolicy;
//! use sandbox::runner::{run, RunOptions};
//!
//! let policy = ToolPolicy::from_json_str("p", r#"{"fs": {"read": ["/etc/**"]}, "net": "deny", "exec": "deny"}"#)?;
//! let argv: Vec<OsString> = vec!["cat".into(), "/etc/hostname".into()];
//! match run(&policy, &argv, &RunOptions::default()) {
//!     Ok(out) => println!("exit {:?}: {}", out.code, String::from_utf8_lossy(&out.stdout)),
//!     Err(e) => eprintln!("refused: {e}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Finding the helper binary (hardened profile only)
//!
//! The strict profile needs no helper binary: its child is cloned straight into its namespaces
//! (see the crate documentation). The hardened profile starts a small helper process (the
//! `policy-sandbox` binary, hidden subcommand [`crate::trampoline::SUBCOMMAND`]) with
//! `posix_spawn` once per process, the zygote ([`crate::zygote`]), which starts and supervises
//! the command of each run and kills its orphans. It is looked up, first hit
//! wins:
//! 1. [`RunOptions::helper()`];
//! 2. the `TOOLPOLICY_SANDBOX_HELPER` environment variable ([`HELPER_ENV`]);
//! 3. the current executable, when it called [`crate::trampoline::serve_if_requested`] first
//!    thing in `main` (the way for an agent binary, e.g. in the examples crate, to need no
//!    separate helper), or when it is `policy-sandbox` itself;
//! 4. `policy-sandbox` next to the current executable, then in its parent directory (so tests
//!    in `target/debug/deps` and examples in `target/debug/examples` find
//!    `target/debug/policy-sandbox`);
//! 5. `policy-sandbox` on `PATH`.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use policy_runtime::policy::EnvPattern;
use policy_runtime::ToolPolicy;

use crate::cgroup::RunCgroup;
use crate::egress::{BrokerOptions, EgressEvent, EgressPlan};
use crate::hostcaps::HostSupport;
use crate::landlock_rules::{negotiated_abi, LandlockSpec, PathRule};
use crate::mounts::{add_bind, MountOp};
use crate::plan::{ExecPlan, MemoryLimit, NetPlan, Plan, ProcessLimit, Profile, DEVICES};
use crate::request::{Request, Status};
use crate::seccomp::{self, FilterOptions};
pub use crate::spawn::Stdio;

/// Environment variable naming the helper binary (the hardened profile's zygote).
pub const HELPER_ENV: &str = "TOOLPOLICY_SANDBOX_HELPER";

/// Receives egress events (allowed and denied connections, DNS questions).
pub type EgressSink = Arc<dyn Fn(EgressEvent) + Send + Sync>;

/// How to run.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// The profile; `None` means strict.
    pub profile: Option<Profile>,
    /// Run without any confinement. Only honoured when set explicitly.
    pub unconfined: bool,
    /// The helper binary (hardened profile: started once per process and seccomp program as the
    /// zygote); see the module docs for the default search.
    pub helper: Option<PathBuf>,
    /// Capture (default) or inherit the standard streams.
    pub stdio: Stdio,
    /// Working directory of the command (default: the caller's).
    pub cwd: Option<PathBuf>,
    /// The environment the policy's `env` filters (default: the caller's).
    pub env: Option<Vec<(OsString, OsString)>>,
    /// Where egress events go (net = hosts).
    pub egress_sink: Option<EgressSink>,
    /// How the egress broker resolves and connects (net = hosts); `None` is
    /// [`BrokerOptions::default`]: the host's resolver, host-local answers refused.
    pub broker: Option<BrokerOptions>,
    /// Where a root runner's strict run takes its view from (default: a leased namespace).
    pub view_source: crate::mounts::template::ViewSource,
    /// The caller makes this one run and exits (`policy-sandbox run`): nothing is built for
    /// later runs that never come. A root runner's strict run builds its view and network
    /// namespace itself, as any other runner's does, instead of a view template and leased
    /// namespaces. A hardened run makes its scratch directory and ruleset for itself alone (no
    /// slot kept, no watches on its rule paths), and its zygote, when the caller has one
    /// thread and little memory, is a fork of the caller instead of the exec'd helper binary (see
    /// [`crate::zygote`]: the fork's memory, the caller's, is out of the command's reach as the
    /// helper's is).
    pub one_shot: bool,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("profile", &self.profile)
            .field("unconfined", &self.unconfined)
            .field("helper", &self.helper)
            .field("stdio", &self.stdio)
            .field("cwd", &self.cwd)
            .field("view_source", &self.view_source)
            .field("one_shot", &self.one_shot)
            .finish_non_exhaustive()
    }
}

impl RunOptions {
    /// Sets the profile.
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }
    /// Sets the helper binary (used by the hardened profile only).
    pub fn helper(mut self, path: impl Into<PathBuf>) -> Self {
        self.helper = Some(path.into());
        self
    }
    /// Sets the streams.
    pub fn stdio(mut self, stdio: Stdio) -> Self {
        self.stdio = stdio;
        self
    }
    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }
    /// Sets the environment to filter.
    pub fn env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.env = Some(env);
        self
    }
    /// Sets the egress event sink.
    pub fn egress_sink(mut self, sink: EgressSink) -> Self {
        self.egress_sink = Some(sink);
        self
    }
    /// Sets the egress broker's options (e.g. a [`crate::egress::Resolver::map`] that points
    /// allowed names at test servers).
    pub fn broker_options(mut self, options: BrokerOptions) -> Self {
        self.broker = Some(options);
        self
    }
    /// Sets where a root runner's strict run takes its view from: a leased mount namespace (the
    /// default) or a copy in a namespace of the run's own.
    pub fn view_source(mut self, source: crate::mounts::template::ViewSource) -> Self {
        self.view_source = source;
        self
    }
    /// Marks the run as the process's only one ([`RunOptions::one_shot`]): the same view and
    /// namespaces, built for this run alone.
    ///
    /// ```
    /// let options = sandbox::runner::RunOptions::default().one_shot();
    /// assert!(options.one_shot);
    /// ```
    pub fn one_shot(mut self) -> Self {
        self.one_shot = true;
        self
    }
    /// Explicitly runs without a sandbox (tests, trusted commands). Never the default.
    pub fn unconfined(mut self) -> Self {
        self.unconfined = true;
        self
    }
}

/// The result of a run.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// Exit code, when the command exited.
    pub code: Option<i32>,
    /// Signal, when it was killed.
    pub signal: Option<i32>,
    /// Killed at `limits.timeout_ms`.
    pub timed_out: bool,
    /// Captured stdout (at most `limits.max_output_bytes`).
    pub stdout: Vec<u8>,
    /// Captured stderr (at most `limits.max_output_bytes`).
    pub stderr: Vec<u8>,
    /// stdout went beyond the cap and was cut.
    pub stdout_truncated: bool,
    /// stderr went beyond the cap and was cut.
    pub stderr_truncated: bool,
    /// The enforcement plan (its report goes into audit events).
    pub plan: Arc<Plan>,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// Every egress connection attempt and DNS question of the run (net = hosts), also sent to
    /// [`RunOptions::egress_sink`] as they happened.
    pub egress: Vec<EgressEvent>,
    /// Hardened: the CPU time the run cost in the sandbox's helper processes, which are not the
    /// caller's children and so not in its `RUSAGE_CHILDREN`: the command and the orphans it
    /// left (from `wait4`), plus the zygote's own time spent on the run. Not counted: the
    /// zygote's one start per process. `None` for strict runs, whose child is the caller's.
    pub helper_cpu: Option<Duration>,
}

impl RunOutput {
    /// Exited with 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// The shell-style status: the code, or 128 + signal.
    pub fn status_code(&self) -> i32 {
        self.code
            .unwrap_or_else(|| 128 + self.signal.unwrap_or(libc::SIGKILL))
    }

    /// Audit facts: status, truncation, the plan's report and the egress events.
    pub fn audit(&self) -> serde_json::Value {
        serde_json::json!({
            "exit_code": self.code,
            "signal": self.signal,
            "timed_out": self.timed_out,
            "stdout_truncated": self.stdout_truncated,
            "stderr_truncated": self.stderr_truncated,
            "elapsed_ms": self.elapsed.as_millis() as u64,
            "sandbox": self.plan.report_json(),
            "egress": self.egress,
        })
    }
}

/// Why a run did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The host or profile cannot enforce the policy, or the sandbox could not be set up. The
    /// command did not start.
    #[error("{0}")]
    Refused(String),
    /// The command could not be executed (status 127: not found, 126: not executable).
    #[error("{message}")]
    Exec {
        /// What failed.
        message: String,
        /// 126 or 127.
        code: i32,
    },
    /// The helper binary was not found or could not be started, or its zygote ended during
    /// the run (the command was then killed; the outcome is unknown).
    #[error("{0}")]
    Helper(String),
    /// A set-up step of the command's process refused before the command started: which
    /// one, and the OS error where there is one ([`crate::request::Refusal`]). The strict
    /// profile's namespaces and view still refuse as [`RunError::Refused`].
    #[error("{0}")]
    SetUp(crate::request::Refusal),
    /// The command ran and ended, but its wait status was taken before the runner could read
    /// it: the agent ignores `SIGCHLD` (the kernel then reaps every child itself) or reaps
    /// every child from a handler, and the kernel keeps no copy for the runner (before Linux
    /// 6.15, which keeps one with the process's pidfd). Its output is lost with it.
    #[error("{0}")]
    StatusLost(String),
}

impl RunError {
    /// The exit status the CLI uses: 125 for refusals, helper problems and a lost status, 126/127
    /// for exec.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Exec { code, .. } => *code,
            _ => crate::trampoline::REFUSED_EXIT,
        }
    }
}

/// A plan with everything the sandbox's child needs, compiled once per policy, profile and
/// program.
#[derive(Debug)]
pub struct Prepared {
    /// The plan.
    pub plan: Arc<Plan>,
    /// The protected list the plan was made with; held so that its address, part of the cache
    /// key, is not reused by another list while this entry lives.
    _protected: Arc<policy_runtime::protected::ProtectedPaths>,
    template: Request,
    egress: Option<EgressPlan>,
    /// Hardened: the Landlock rules, built into a ruleset per scratch slot ([`crate::slots`])
    /// and so not sent with each request (the template's spec has no path rules).
    rules: LandlockSpec,
    /// Which slots are this plan's.
    slot_key: u64,
    /// Hardened: every root's canonical path, resolved once here (not per run) for
    /// [`redirect_home`].
    root_paths: Vec<PathBuf>,
    /// Strict: how the view is built at each run.
    view: Option<crate::mounts::template::ViewBuild>,
    /// Strict with a network namespace: where each run's comes from.
    netns: Option<crate::netns::NetnsSource>,
}

impl Prepared {
    /// Strict: whether each run copies the view from a template built once for this plan, or
    /// builds it itself (and why); `None` for the hardened profile, which has no view. A run
    /// with [`RunOptions::one_shot`] builds it itself whatever this says.
    pub fn view_build(&self) -> Option<&crate::mounts::template::ViewBuild> {
        self.view.as_ref()
    }

    /// Strict with a view copied from a template: whether its runs are lent a namespace that
    /// holds the view, as far as its runs found out so far ([`ViewLease`]); `None` for a plan
    /// whose view is built per run, and for the hardened profile.
    ///
    /// [`ViewLease`]: crate::mounts::template::ViewLease
    pub fn view_lease(&self) -> Option<crate::mounts::template::ViewLease> {
        matches!(
            self.view,
            Some(
                crate::mounts::template::ViewBuild::Template
                    | crate::mounts::template::ViewBuild::HeldTemplate
            )
        )
        .then(|| crate::mounts::template::lease_status(self.slot_key))
    }

    /// Strict: whether each run's network namespace is leased from a pool of empty ones (the
    /// runner's, or that of the user namespace holding the plan's view template) or made by
    /// the run (and why); `None` when the plan has none (`net = allow`) and
    /// for the hardened profile. A run with [`RunOptions::one_shot`] makes its own.
    pub fn netns_source(&self) -> Option<&crate::netns::NetnsSource> {
        self.netns.as_ref()
    }
}

/// Policy hash, profile, program, `PATH`, the protected list in force (by address: see
/// [`Prepared`]), and the process's [`Standing`].
type CacheKey = (String, Profile, PathBuf, Option<OsString>, usize, Standing);

/// What a prepared plan's decisions rest on beside the policy: the process's effective ids and,
/// for a strict plan, its user namespace. Whether a strict view is built in a template held in
/// a user namespace, and whether a network namespace is leased and how, turn on the
/// capabilities the process holds; a process that changed its ids or entered a user namespace
/// since (as an agent that drops root, or enters a container of its own) gets a plan made
/// again, not one whose namespaces it can no longer join or come back from. A hardened plan
/// makes no such decision (what it asks of the host is the process's, `HostSupport::cached`),
/// so its runs do not read the namespace (about 2 µs).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct Standing {
    euid: libc::uid_t,
    egid: libc::gid_t,
    /// The user namespace's inode; 0 for a hardened plan, or when it could not be read.
    user_ns: u64,
}

impl Standing {
    /// The calling thread's (a user namespace is the whole process's), for a plan of `profile`.
    fn now(profile: Profile) -> Standing {
        // SAFETY: getters without pointers.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let user_ns = match profile {
            Profile::Strict => {
                crate::netns::namespace_inode(c"/proc/thread-self/ns/user", None).unwrap_or(0)
            }
            Profile::Hardened => 0,
        };
        Standing {
            euid,
            egid,
            user_ns,
        }
    }
}

fn cache() -> &'static Mutex<HashMap<CacheKey, Arc<Prepared>>> {
    static CACHE: OnceLock<Mutex<HashMap<CacheKey, Arc<Prepared>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Plans and compiles (cached): refuses when the plan cannot be enforced. A script's
/// interpreter chain is resolved with this process's `PATH`; [`prepare_for`] takes the one
/// the command will see.
pub fn prepare(
    policy: &ToolPolicy,
    profile: Profile,
    program: &Path,
) -> Result<Arc<Prepared>, RunError> {
    let path = std::env::var_os("PATH");
    prepare_for(policy, profile, program, path.as_deref())
}

/// [`prepare`] for a command that will see `path_var` as its `PATH` (`None`: it has none),
/// which decides where a `#!/usr/bin/env NAME` script's interpreter is found.
pub fn prepare_for(
    policy: &ToolPolicy,
    profile: Profile,
    program: &Path,
    path_var: Option<&OsStr>,
) -> Result<Arc<Prepared>, RunError> {
    prepare_keyed(policy, profile, program, path_var, false)
}

/// [`prepare_for`]; `once`: for a one-shot run ([`RunOptions::one_shot`]), which neither hashes
/// its policy (its canonical JSON and a digest of it, about a tenth of a plain spawn for a
/// small policy) for a lookup that never comes, nor asks the kernel whether a leased network
/// namespace could serve it ([`crate::netns::decide_once`]). It still finds the last few
/// prepared by comparison (a `--report` prepared the same), and keeps nothing.
fn prepare_keyed(
    policy: &ToolPolicy,
    profile: Profile,
    program: &Path,
    path_var: Option<&OsStr>,
    once: bool,
) -> Result<Arc<Prepared>, RunError> {
    let protected = policy_runtime::protected::process_list();
    let protected_id = Arc::as_ptr(&protected) as usize;
    let standing = Standing::now(profile);
    let same = |(p, pr, prog, var, id, st): &RecentKey| {
        *pr == profile
            && *id == protected_id
            && *st == standing
            && prog == program
            && var.as_deref() == path_var
            && p == policy
    };
    // Equal policies have equal hashes: comparing with the last few prepared ones spares the
    // hash, whose cost grows with the policy (its canonical JSON), on every run.
    if let Some((_, p)) = recent()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(k, _)| same(k))
    {
        return Ok(p.clone());
    }
    if once {
        // Not kept: a later run of the process, if any, plans for runs to come.
        let prepared = build(policy, profile, program, path_var, protected, true)?;
        return Ok(Arc::new(prepared));
    }
    let key = (
        policy.hash(),
        profile,
        program.to_path_buf(),
        path_var.map(OsStr::to_os_string),
        protected_id,
        standing,
    );
    let cached = cache()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .cloned();
    let prepared = match cached {
        Some(p) => p,
        None => {
            let prepared = Arc::new(build(policy, profile, program, path_var, protected, false)?);
            cache()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, prepared.clone());
            prepared
        }
    };
    let mut recent = recent().lock().unwrap_or_else(|e| e.into_inner());
    if recent.len() == RECENT {
        recent.pop_back();
    }
    let entry = (
        policy.clone(),
        profile,
        program.to_path_buf(),
        path_var.map(OsStr::to_os_string),
        protected_id,
        standing,
    );
    recent.push_front((entry, prepared.clone()));
    Ok(prepared)
}

/// How many prepared policies [`prepare_for`] finds by comparison before hashing.
const RECENT: usize = 8;

type RecentKey = (
    ToolPolicy,
    Profile,
    PathBuf,
    Option<OsString>,
    usize,
    Standing,
);

fn recent() -> &'static Mutex<std::collections::VecDeque<(RecentKey, Arc<Prepared>)>> {
    static RECENT_LIST: Mutex<std::collections::VecDeque<(RecentKey, Arc<Prepared>)>> =
        Mutex::new(std::collections::VecDeque::new());
    &RECENT_LIST
}

/// Library directories that stay executable (for `mmap(PROT_EXEC)` of shared libraries) when
/// everything else is `noexec`.
const LIBRARY_DIRS: &[&str] = &[
    "/lib",
    "/lib64",
    "/lib32",
    "/usr/lib",
    "/usr/lib64",
    "/usr/lib32",
    "/usr/local/lib",
];

fn build(
    policy: &ToolPolicy,
    profile: Profile,
    program: &Path,
    path_var: Option<&OsStr>,
    protected: Arc<policy_runtime::protected::ProtectedPaths>,
    once: bool,
) -> Result<Prepared, RunError> {
    let limits = &policy.limits;
    let host =
        HostSupport::cached_for(limits.memory_bytes.is_some() || limits.max_processes.is_some());
    let mut plan = Plan::new(policy, profile, host);
    if let Some(why) = plan.refusal() {
        return Err(RunError::Refused(why));
    }
    let strict = profile == Profile::Strict;
    let exec_allow = plan.exec == ExecPlan::Allow;
    // Host pathname sockets inside the roots: every connect goes through the supervisor.
    let supervise_unix = strict && plan.net != NetPlan::Allow;

    if let ExecPlan::Programs(list) = &plan.exec {
        check_command_is_listed(program, list)?;
    }
    // exec = deny admits the command's interpreter chain, resolved now, and nothing else.
    let chain = crate::interpreters::resolve(program, path_var);
    if plan.exec == ExecPlan::Deny && chain.is_script() {
        plan.rules.push(crate::plan::RuleReport {
            rule: format!("exec deny: the command's interpreter chain {}", chain.steps.join(" -> ")),
            declared: false,
            enforcement: crate::plan::Enforcement::Exact,
            by: vec![
                "landlock-execute (the chain's files only)".into(),
                if chain.relays.is_empty() {
                    "one execve (the kernel follows #! lines)".into()
                } else {
                    format!(
                        "seccomp user-notify: the command's execve, then {} PATH candidates tried by the relay",
                        chain.relay_execs
                    )
                },
            ],
        });
    }
    let mut executables = Vec::new();
    add_executable(&mut executables, program, 0);
    if plan.exec == ExecPlan::Deny {
        for file in &chain.files {
            add_executable(&mut executables, file, 0);
        }
    }
    if let ExecPlan::Programs(list) = &plan.exec {
        for p in list {
            add_executable(&mut executables, p, 0);
        }
    }

    let egress = match &plan.net {
        NetPlan::Hosts(hosts) => Some(
            EgressPlan::new(hosts)
                .map_err(|e| RunError::Refused(format!("net hosts cannot be enforced: {e}")))?,
        ),
        _ => None,
    };

    // Landlock rules name canonical paths (and are opened without following links); a
    // declared root that resolves through a symlink is refused, since whoever can write
    // above it decides where it points.
    let mut canonical_roots = Vec::new();
    // The roots that exist and are written canonically (every declared one that exists): bound
    // as they are below, without resolving them again.
    let mut as_written = Vec::new();
    for root in &plan.roots {
        let resolved = crate::canonical::canonicalize(&root.path);
        as_written.push(resolved.as_ref().is_ok_and(|c| *c == root.path));
        let path = match resolved {
            Ok(c) if root.declared && c != root.path => {
                return Err(RunError::Refused(format!(
                    "fs root {} resolves through a symlink to {}; declare the real path",
                    root.path.display(),
                    c.display()
                )))
            }
            Ok(c) => c,
            Err(_) => root.path.clone(),
        };
        canonical_roots.push((path, root.write));
    }

    let mut paths = Vec::new();
    for (path, write) in &canonical_roots {
        paths.push(PathRule {
            path: path.clone(),
            read: true,
            write: *write,
            exec: exec_allow,
            optional: true,
        });
    }
    for (i, exe) in executables.iter().enumerate() {
        paths.push(PathRule {
            path: crate::canonical::canonicalize(exe).unwrap_or_else(|_| exe.clone()),
            read: true,
            write: false,
            exec: true,
            optional: i > 0,
        });
    }
    paths.extend(system_rules());
    if strict {
        // The sandbox's own scratch memory and ptys (see `MountOp::Scratch` and `Devpts`); /tmp
        // only when it is the private one, never the host's under a read-only root.
        let mut own = vec![("/dev/shm", exec_allow), ("/dev/pts", false)];
        if !plan.host_tmp {
            own.push(("/tmp", exec_allow));
        }
        for (path, exec) in own {
            paths.push(PathRule {
                path: path.into(),
                read: true,
                write: true,
                exec,
                optional: false,
            });
        }
    }
    if let Some(e) = &egress {
        for (path, _) in e.files() {
            paths.push(PathRule {
                path,
                read: true,
                write: false,
                exec: false,
                optional: false,
            });
        }
    }
    let mut landlock = LandlockSpec {
        abi: negotiated_abi(plan.landlock_abi),
        paths,
        restrict_connect: plan.net != NetPlan::Allow,
        connect_ports: egress
            .as_ref()
            .map(|e| e.connect_ports())
            .unwrap_or_default(),
        bind_ports: if plan.net == NetPlan::Allow {
            vec![0]
        } else {
            Vec::new()
        },
        unix_connect_beneath: supervise_unix.then(|| vec![PathBuf::from("/tmp")]),
    };

    // Mount view.
    let mut mounts = Vec::new();
    if strict {
        mounts.push(MountOp::Tmpfs {
            path: "/dev".into(),
            exec: false,
            size_bytes: crate::mounts::DEV_TMPFS_BYTES,
        });
        mounts.push(MountOp::Scratch {
            size_bytes: plan.scratch_bytes,
            tmp: !plan.host_tmp,
            exec: exec_allow,
        });
        mounts.push(MountOp::Devpts);
        for dev in DEVICES {
            if Path::new(dev).exists() {
                // Read-only binds: reading and writing a device ignore the mount's flag, but
                // chmod, chown, utimes and xattrs do not; the nodes are the host's own, which a
                // root runner's tool would otherwise own (chmod 000 /dev/null breaks the host).
                mounts.push(MountOp::Bind {
                    path: dev.into(),
                    write: false,
                    exec: false,
                    device: true,
                    optional: true,
                });
            }
        }
        mounts.push(MountOp::Proc);
        for (root, canonical) in plan.roots.iter().zip(&as_written) {
            // /proc and /dev are the sandbox's own (fresh procfs, curated nodes): binding the
            // host's over them would show host processes and devices.
            if root.path.starts_with("/proc") || root.path.starts_with("/dev") {
                continue;
            }
            if *canonical {
                mounts.push(MountOp::Bind {
                    path: root.path.clone(),
                    write: root.write,
                    exec: exec_allow,
                    device: false,
                    optional: true,
                });
            } else {
                add_bind(&mut mounts, &root.path, root.write, exec_allow, false);
            }
        }
        if !exec_allow {
            for dir in LIBRARY_DIRS {
                add_bind(&mut mounts, Path::new(dir), false, true, false);
            }
        }
        for exe in &executables {
            add_bind(&mut mounts, exe, false, true, false);
        }
        for rule in &mut plan.protected {
            mounts.extend(keep_protected(rule, exec_allow));
        }
        if let Some(e) = &egress {
            for (path, content) in e.files() {
                mounts.push(MountOp::File { path, content });
            }
        }
        crate::mounts::normalize(&mut mounts);
        // Once per policy: a run builds only the rules that grant something the others do not.
        let mask = crate::rule_cover::masks(landlock.abi, landlock.unix_connect_beneath.clone());
        landlock.paths =
            crate::rule_cover::fold(std::mem::take(&mut landlock.paths), &mounts, &mask);
    }

    let filters = seccomp::compile(FilterOptions {
        exec_notify: plan.exec == ExecPlan::Deny,
        deny_sockets: !strict && plan.net == NetPlan::Deny,
        restrict_socket_families: plan.net != NetPlan::Allow,
        deny_memfd: matches!(plan.exec, ExecPlan::Programs(_)),
        shares_host_namespaces: !strict,
        deny_metadata_writes: !strict && !plan.host_metadata_writable(),
        supervise_unix,
        keep_process_group: !strict,
        relay_execs: !chain.relays.is_empty(),
    })
    .map_err(RunError::Refused)?;
    // Hardened, exec = deny: the command's own execve passes its tail by the tail's secret, and
    // only the relays' execs need the supervisor ([`seccomp::Filters`]).
    let exec_secret = !strict && plan.exec == ExecPlan::Deny;

    let mut rlimits = vec![(libc::RLIMIT_CORE, 0u64)];
    let l = &plan.limits;
    for (res, v) in [
        (libc::RLIMIT_AS, l.memory_bytes),
        (libc::RLIMIT_CPU, l.cpu_seconds),
        (libc::RLIMIT_FSIZE, l.max_file_bytes),
        (libc::RLIMIT_NOFILE, l.max_open_files),
    ] {
        if let Some(v) = v {
            rlimits.push((res, v));
        }
    }
    if let ProcessLimit::Rlimit(n) = plan.process_limit {
        rlimits.push((libc::RLIMIT_NPROC, n));
    }

    let template = Request {
        profile,
        program: program.to_path_buf(),
        argv: Vec::new(),
        env: Vec::new(),
        cwd: None,
        mounts,
        landlock,
        ruleset_fd: None,
        exec_notify: if exec_secret {
            !chain.relays.is_empty()
        } else {
            plan.exec == ExecPlan::Deny || supervise_unix
        },
        exec_secret,
        exec_budget: 1 + chain.relay_execs,
        exec_relays: if plan.exec == ExecPlan::Deny {
            chain
                .relays
                .iter()
                .filter_map(|r| std::fs::metadata(r).ok())
                .map(|m| {
                    use std::os::unix::fs::MetadataExt;
                    (m.dev(), m.ino())
                })
                .collect()
        } else {
            Vec::new()
        },
        filters,
        rlimits,
        inherited: Default::default(),
        cgroups: Vec::new(),
        netns: strict && plan.net != NetPlan::Allow,
        loopback: egress.is_some(),
        egress: egress.clone(),
        timeout_ms: l.timeout_ms,
        parent_pid: 0,
    };
    let mut template = template;
    let rules = if strict {
        LandlockSpec::default()
    } else {
        LandlockSpec {
            paths: std::mem::take(&mut template.landlock.paths),
            ..template.landlock.clone()
        }
    };
    static SLOT_KEYS: AtomicU64 = AtomicU64::new(0);
    let view = strict.then(|| crate::mounts::template::decide(&template.mounts));
    let netns = if once {
        crate::netns::decide_once(template.netns, template.loopback)
    } else {
        let held_view = matches!(view, Some(crate::mounts::template::ViewBuild::HeldTemplate));
        crate::netns::decide(template.netns, template.loopback, held_view)
    };
    Ok(Prepared {
        plan: Arc::new(plan),
        _protected: protected,
        template,
        egress,
        rules,
        slot_key: SLOT_KEYS.fetch_add(1, Ordering::Relaxed),
        view,
        netns,
        root_paths: if strict {
            Vec::new()
        } else {
            canonical_roots.into_iter().map(|(path, _)| path).collect()
        },
    })
}

/// Strict: the mounts that keep a protected path a write root covers unwritable, and its row
/// made true ([`MountOp::Keep`]): the path bound read-only over itself, and every directory
/// between the write root and it pinned as a mount point. What cannot be kept so stays
/// `not_enforced`, with why: a path that does not exist (a read-only mount needs an existing
/// file, and making one would change the host), a symlink (a mount cannot lie over one), a
/// write root at or inside the protected path.
pub(crate) fn keep_protected(rule: &mut crate::plan::ProtectedRule, exec: bool) -> Vec<MountOp> {
    let Some(root) = &rule.write_root else {
        return Vec::new();
    };
    let root = crate::canonical::canonicalize(root).unwrap_or_else(|_| root.clone());
    let not_enforced = |rule: &mut crate::plan::ProtectedRule, why: String| {
        rule.enforcement = crate::plan::Enforcement::NotEnforced {
            reason: format!("the write root {} covers it, and {why}", root.display()),
        };
        Vec::new()
    };
    let path = match std::fs::symlink_metadata(&rule.path) {
        Err(_) => {
            return not_enforced(rule, "it does not exist: a read-only mount needs an existing file, and making one would change the host; create it before the run, or narrow the write glob".into())
        }
        Ok(m) if m.file_type().is_symlink() => {
            return not_enforced(rule, "it is a symlink, over which no mount can lie (the tool could replace the link); protect its target, or narrow the write glob".into())
        }
        Ok(_) => crate::canonical::canonicalize(&rule.path).unwrap_or_else(|_| rule.path.clone()),
    };
    if !path.starts_with(&root) || path == root {
        return not_enforced(
            rule,
            "the write root lies at or inside the protected path; narrow the write glob".into(),
        );
    }
    let mut ops: Vec<MountOp> = path
        .ancestors()
        .skip(1)
        .take_while(|a| *a != root)
        .map(|a| MountOp::Keep {
            path: a.to_path_buf(),
            read_only: false,
            exec,
        })
        .collect();
    ops.push(MountOp::Keep {
        path,
        read_only: true,
        exec,
    });
    rule.enforcement = crate::plan::Enforcement::Exact;
    rule.by = vec![
        "read-only bind mount over it (write, truncate: EROFS)".into(),
        "a mount point: unlink, rename over, replace by a symlink refused (EBUSY); hard links to it refused (EXDEV)".into(),
        "its directories below the write root pinned as mount points (rename, remove: EBUSY)".into(),
    ];
    ops
}

/// Under an exec allow-list the command itself is a program like any other it could start:
/// refused unless listed.
fn check_command_is_listed(program: &Path, list: &[PathBuf]) -> Result<(), RunError> {
    let canonical =
        |p: &Path| crate::canonical::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let command = canonical(program);
    if list.iter().any(|p| canonical(p) == command) {
        return Ok(());
    }
    let listed: Vec<String> = list.iter().map(|p| p.display().to_string()).collect();
    Err(RunError::Refused(format!(
        "the command {} is not in the policy's exec allow-list [{}]: under an exec list the \
         command is checked like every program it starts; list it in `exec.allow` or run a \
         listed program",
        program.display(),
        listed.join(", ")
    )))
}

/// Adds a program and, recursively, its ELF interpreter or `#!` interpreter.
fn add_executable(out: &mut Vec<PathBuf>, path: &Path, depth: u32) {
    if depth > 4 || out.iter().any(|p| p == path) {
        return;
    }
    out.push(path.to_path_buf());
    if let Some(interp) = interpreter_of(path) {
        add_executable(out, &interp, depth + 1);
    }
}

/// The `PT_INTERP` of a 64-bit ELF, or the program of a `#!` line.
pub fn interpreter_of(path: &Path) -> Option<PathBuf> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let mut head = [0u8; 64];
    let n = f.read(&mut head).ok()?;
    if n >= 2 && &head[..2] == b"#!" {
        let mut line = Vec::new();
        f.seek(SeekFrom::Start(2)).ok()?;
        let mut byte = [0u8; 1];
        while line.len() < 256 && f.read(&mut byte).ok()? == 1 && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        let text = String::from_utf8_lossy(&line);
        let prog = text.split_whitespace().next()?;
        return Some(PathBuf::from(prog));
    }
    if n < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 {
        return None;
    }
    let u16_at = |o: usize| u16::from_le_bytes([head[o], head[o + 1]]);
    let phoff = u64::from_le_bytes(head[0x20..0x28].try_into().ok()?);
    let phentsize = u16_at(0x36) as u64;
    let phnum = u16_at(0x38) as u64;
    for i in 0..phnum.min(64) {
        let mut ph = [0u8; 56];
        f.seek(SeekFrom::Start(phoff + i * phentsize)).ok()?;
        f.read_exact(&mut ph).ok()?;
        if u32::from_le_bytes(ph[0..4].try_into().ok()?) == 3 {
            let off = u64::from_le_bytes(ph[8..16].try_into().ok()?);
            let size = u64::from_le_bytes(ph[32..40].try_into().ok()?).min(4096);
            let mut buf = vec![0u8; size as usize];
            f.seek(SeekFrom::Start(off)).ok()?;
            f.read_exact(&mut buf).ok()?;
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            return Some(PathBuf::from(OsStr::from_bytes(&buf[..end])));
        }
    }
    None
}

/// Finds the helper binary (see the module docs).
pub fn locate_helper(explicit: Option<&Path>) -> Result<PathBuf, RunError> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os(HELPER_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let name = "policy-sandbox";
    let exe = std::env::current_exe().ok();
    if crate::trampoline::self_serves() {
        if let Some(exe) = &exe {
            return Ok(exe.clone());
        }
    }
    if let Some(exe) = &exe {
        if exe.file_name().is_some_and(|n| n == name) {
            return Ok(exe.clone());
        }
        let mut dir = exe.parent();
        for _ in 0..2 {
            let Some(d) = dir else { break };
            let candidate = d.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
            dir = d.parent();
        }
    }
    if let Some(p) = crate::plan::resolve_program(Path::new(name), None) {
        return Ok(p);
    }
    Err(RunError::Helper(format!(
        "cannot find the sandbox helper `{name}`: build it (`cargo build -p sandbox --bin {name}`) and put it next to {}, on PATH, or name it with {HELPER_ENV} or RunOptions::helper",
        exe.map_or_else(|| "the executable".to_string(), |e| e.display().to_string())
    )))
}

/// Creates the run's cgroups for the limits the plan holds by cgroup, and names them in the
/// request; they are removed when the returned guards drop (after the run).
fn run_cgroups(plan: &Plan, request: &mut Request) -> Result<Vec<RunCgroup>, RunError> {
    let mut cgroups = Vec::new();
    // Looked up only for a plan holding a limit by cgroup (the plan was made with them).
    let host = || HostSupport::cached();
    if let ProcessLimit::Cgroup(n) = plan.process_limit {
        let parent = host().pids_cgroup.as_ref().ok_or_else(|| {
            RunError::Refused("limits.max_processes: the pids cgroup disappeared".into())
        })?;
        cgroups.push(RunCgroup::pids(parent, n).map_err(RunError::Refused)?);
    }
    if let MemoryLimit::Cgroup(bytes) = plan.memory_limit {
        let parent = host().memory_cgroup.as_ref().ok_or_else(|| {
            RunError::Refused("limits.memory_bytes: the memory cgroup disappeared".into())
        })?;
        cgroups.push(RunCgroup::memory(parent, bytes).map_err(RunError::Refused)?);
    }
    request.cgroups = cgroups.iter().map(|c| c.path().to_path_buf()).collect();
    Ok(cgroups)
}

/// The variables naming a user's own directories, which programs probe with `access()` (not
/// governed by Landlock) and then fail to open.
pub const HOME_VARIABLES: &[&str] = &[
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
];

/// Hardened profile: points each of [`HOME_VARIABLES`] that lies outside every root at the
/// scratch directory. Without a mount namespace the directory stays visible, so a program
/// (git reading `~/.gitconfig`, say) sees that the file exists, then gets `EACCES` from
/// Landlock and gives up; an empty home of its own behaves as a fresh account.
/// `roots` are the roots' canonical paths, resolved when the plan was prepared.
fn redirect_home(env: &mut [(OsString, OsString)], roots: &[PathBuf], scratch: &Path) {
    for (name, value) in env.iter_mut() {
        if !HOME_VARIABLES.iter().any(|v| name == v) {
            continue;
        }
        let path = Path::new(value.as_os_str());
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let inside = roots.iter().any(|r| path.starts_with(r));
        if !inside {
            *value = scratch.as_os_str().to_os_string();
        }
    }
}

fn filtered_env(plan: &Plan, source: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
    filter_env(plan.env.as_deref(), source)
}

pub(crate) fn filter_env(
    patterns: Option<&[String]>,
    source: Vec<(OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    match patterns {
        None => source,
        Some(patterns) => {
            let patterns: Vec<EnvPattern> =
                patterns.iter().filter_map(|p| p.parse().ok()).collect();
            source
                .into_iter()
                .filter(|(k, _)| {
                    k.to_str()
                        .is_some_and(|k| patterns.iter().any(|p| p.matches(k)))
                })
                .collect()
        }
    }
}

/// The plan [`run`] would enforce for `argv` with `opts`, including what depends on the
/// command (a script's interpreter chain), or why it would refuse. Nothing is started.
pub fn plan_for(
    policy: &ToolPolicy,
    argv: &[OsString],
    opts: &RunOptions,
) -> Result<Arc<Plan>, RunError> {
    Ok(prepared_for(policy, argv, opts)?.plan.clone())
}

/// The prepared policy [`run`] uses for `argv` with `opts` (the program it resolves, the
/// `PATH` the command will see), or why it would refuse; the one whose
/// [`Prepared::view_lease`] tells about those runs. Nothing is started.
///
/// ```no_run
/// use sandbox::runner::{prepared_for, RunOptions};
///
/// let policy = policy_runtime::ToolPolicy::from_json_str("tool", r#"{"fs": {"read": ["/srv/**"]}}"#)?;
/// let prepared = prepared_for(&policy, &["/bin/true".into()], &RunOptions::default())?;
/// println!("{:?}", prepared.view_build());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn prepared_for(
    policy: &ToolPolicy,
    argv: &[OsString],
    opts: &RunOptions,
) -> Result<Arc<Prepared>, RunError> {
    let source_env = source_env(policy, opts);
    let program = resolve_command(argv, &source_env)?;
    let profile = opts.profile.unwrap_or(Profile::Strict);
    let path = command_path(policy, &source_env);
    prepare_for(policy, profile, &program, path.as_deref())
}

/// The environment a run starts from: the caller's ([`RunOptions::env`]), or else this
/// process's. A confined run whose policy passes no variable (`env = "deny"`) reads only
/// `PATH` from the process, to find the program: collecting every variable at each run cost
/// the spawn bench's hardened runs about 16 µs each in a profile (3 % of the agent's part;
/// 6 µs in a loop, for `cargo`'s 58 variables), for variables the command never gets. An
/// unconfined run gets the whole environment.
fn source_env(policy: &ToolPolicy, opts: &RunOptions) -> Vec<(OsString, OsString)> {
    if let Some(env) = &opts.env {
        return env.clone();
    }
    let passes_none = crate::plan::Plan::env_patterns(policy).is_some_and(|p| p.is_empty());
    if passes_none && !opts.unconfined {
        return std::env::var_os("PATH")
            .map(|path| vec![("PATH".into(), path)])
            .unwrap_or_default();
    }
    std::env::vars_os().collect()
}

/// The canonical program `argv[0]` names, found through the `PATH` of `env`.
fn resolve_command(argv: &[OsString], env: &[(OsString, OsString)]) -> Result<PathBuf, RunError> {
    let Some(first) = argv.first() else {
        return Err(RunError::Exec {
            message: "empty command".into(),
            code: 127,
        });
    };
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone());
    let program =
        crate::plan::resolve_program(Path::new(first), path_var.as_deref()).ok_or_else(|| {
            RunError::Exec {
                message: format!("{}: command not found", first.to_string_lossy()),
                code: 127,
            }
        })?;
    Ok(crate::canonical::canonicalize(&program).unwrap_or(program))
}

/// The `PATH` the command will see after the policy's `env` filter.
fn command_path(policy: &ToolPolicy, env: &[(OsString, OsString)]) -> Option<OsString> {
    let plan_env = crate::plan::Plan::env_patterns(policy);
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())?;
    let kept = filter_env(plan_env.as_deref(), vec![("PATH".into(), path)]);
    kept.into_iter().next().map(|(_, v)| v)
}

/// Runs `argv` confined by `policy`. Refuses (without starting anything) when the host cannot
/// enforce the policy under the profile; runs unconfined only with
/// [`RunOptions::unconfined()`].
pub fn run(
    policy: &ToolPolicy,
    argv: &[OsString],
    opts: &RunOptions,
) -> Result<RunOutput, RunError> {
    let start = Instant::now();
    let source_env = source_env(policy, opts);
    let program = resolve_command(argv, &source_env)?;
    if opts.unconfined {
        return run_unconfined(policy, &program, argv, opts, source_env, start);
    }
    let profile = opts.profile.unwrap_or(Profile::Strict);
    let command_path = command_path(policy, &source_env);
    let prepared = prepare_keyed(
        policy,
        profile,
        &program,
        command_path.as_deref(),
        opts.one_shot,
    )?;
    let plan = prepared.plan.clone();
    // Only the hardened profile needs the helper binary; strict children are cloned directly.
    let helper = match profile {
        Profile::Hardened => Some(locate_helper(opts.helper.as_deref())?),
        Profile::Strict => None,
    };

    let mut request = prepared.template.clone();
    request.argv = argv.iter().map(|a| a.as_bytes().to_vec()).collect();
    let mut env = filtered_env(&plan, source_env);
    // Hardened: a scratch directory and the ruleset of the policy's rules with it, leased
    // for the run and given back (emptied) when `lease` drops, after the run has ended.
    let mut lease = None;
    if profile == Profile::Hardened {
        let exec = plan.exec == ExecPlan::Allow;
        let leased = if opts.one_shot {
            crate::slots::lease_once(&prepared.rules, exec)
        } else {
            crate::slots::lease(prepared.slot_key, &prepared.rules, exec)
        }
        .map_err(RunError::Refused)?;
        let dir = leased.dir().to_path_buf();
        request.ruleset_fd = Some(crate::request::RULESET_FD);
        env.retain(|(k, _)| k != "TMPDIR");
        env.push(("TMPDIR".into(), dir.clone().into_os_string()));
        redirect_home(&mut env, &prepared.root_paths, &dir);
        lease = Some(leased);
    }
    request.env = env
        .into_iter()
        .map(|(k, v)| {
            let mut e = k.into_vec();
            e.push(b'=');
            e.extend(v.into_vec());
            e
        })
        .collect();
    request.cwd = Some(match &opts.cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
    });
    request.parent_pid = std::process::id() as i32;
    let _cgroups = run_cgroups(&plan, &mut request)?;
    let (broker_end, child_end) = match &prepared.egress {
        Some(_) => {
            let (p, c) = crate::fdpass::socketpair(libc::SOCK_STREAM)
                .map_err(|e| RunError::Refused(format!("egress channel: {e}")))?;
            (Some(p), Some(c))
        }
        None => (None, None),
    };
    let timeout = plan.limits.timeout_ms.map(Duration::from_millis);
    // Strict, net = deny, root runner: an empty network namespace leased for this run; when
    // none can be had, the child makes its own as any other runner's does.
    let netns = match prepared.netns {
        Some(crate::netns::NetnsSource::Leased) if !opts.one_shot => crate::netns::lease().ok(),
        _ => None,
    };
    // The view's copy for this run, made here (a detached tree cannot be cloned from inside
    // the child's user namespace): closed after the run, or its leased namespace given back.
    let copy = match (&helper, &prepared.view) {
        (None, Some(build)) if !opts.one_shot => {
            use crate::mounts::template::ViewBuild;
            let held = match build {
                ViewBuild::Template => Some(false),
                ViewBuild::HeldTemplate => Some(true),
                ViewBuild::PerRun(_) => None,
            };
            held.and_then(|held| {
                let net = prepared.netns == Some(crate::netns::NetnsSource::Held);
                crate::mounts::template::copy(
                    prepared.slot_key,
                    &request.mounts,
                    &request.landlock.paths,
                    opts.view_source,
                    held,
                    net,
                    request.netns,
                )
            })
        }
        _ => None,
    };
    let running = match &helper {
        None => crate::spawn::spawn_direct(
            &request,
            opts.stdio,
            child_end,
            timeout,
            copy.as_ref(),
            netns
                .as_ref()
                .map(|lease| lease.fd())
                .or_else(|| copy.as_ref().and_then(|c| c.netns())),
        )
        .map_err(RunError::Refused)?,
        Some(helper) => crate::zygote::spawn(
            helper,
            if opts.one_shot {
                crate::zygote::Origin::Fork
            } else {
                crate::zygote::Origin::Exec
            },
            opts.stdio,
            &mut request,
            lease.as_ref().map(|l| l.ruleset()),
        )?,
    };
    let mut broker_error = None;
    let egress_events: Arc<Mutex<Vec<EgressEvent>>> = Arc::default();
    let _broker = match (&prepared.egress, broker_end) {
        (Some(plan), Some(end)) => {
            let forward = opts.egress_sink.clone();
            let kept = Arc::clone(&egress_events);
            let sink: EgressSink = Arc::new(move |event: EgressEvent| {
                if let Some(forward) = &forward {
                    forward(event.clone());
                }
                if let Ok(mut kept) = kept.lock() {
                    kept.push(event);
                }
            });
            let options = opts.broker.clone().unwrap_or_default();
            match crate::egress::start_broker_with(plan, end, sink, options) {
                Ok(b) => Some(b),
                Err(e) => {
                    broker_error = Some(e.to_string());
                    running.kill();
                    None
                }
            }
        }
        _ => None,
    };
    // The zygote enforces the timeout itself; the backstop catches a zygote that hangs.
    let backstop = timeout.map(|t| t + Duration::from_secs(5));
    let collected = running.collect(plan.limits.max_output_bytes, backstop);
    // Reaped pid 1: every process of the run has ended (see `crate::netns`).
    let drained = collected.run_drained && !collected.helper_lost;
    if let (Some(netns), true) = (netns, drained) {
        netns.give_back();
    }
    if let (Some(copy), true) = (copy, drained) {
        copy.give_back();
    }
    if let Some(lease) = &mut lease {
        // Only a zygote that saw the run's process group empty has killed and reaped every
        // process of the run; after anything else the scratch directory may still be in use.
        if collected.helper_lost || collected.backstop_killed || !collected.run_drained {
            lease.taint();
        }
    }
    // Dropping the broker waits for the final events of live connections.
    drop(_broker);
    let egress = std::mem::take(&mut *egress_events.lock().unwrap_or_else(|e| e.into_inner()));

    if let Some(why) = collected.status_lost {
        return Err(RunError::StatusLost(why));
    }
    if collected.helper_lost {
        return Err(RunError::Helper(
            "the sandbox helper (zygote) ended during the run: the run's supervisor killed the \
             command's processes, and its outcome is unknown (was the helper killed from \
             outside?)"
                .into(),
        ));
    }
    let mut exited = None;
    for status in &collected.statuses {
        match status {
            Status::Refused(why) => return Err(RunError::Refused(why.clone())),
            Status::SetUp(refusal) => return Err(RunError::SetUp(refusal.clone())),
            Status::ExecFailed { errno } => {
                return Err(RunError::Exec {
                    message: format!(
                        "{}: {}",
                        program.display(),
                        std::io::Error::from_raw_os_error(*errno)
                    ),
                    code: if *errno == libc::ENOENT { 127 } else { 126 },
                })
            }
            Status::Exited { .. } => exited = Some(status.clone()),
        }
    }
    if let Some(e) = broker_error {
        return Err(RunError::Refused(format!("egress broker: {e}")));
    }
    let (code, signal, timed_out) = match exited {
        Some(Status::Exited {
            code,
            signal,
            timed_out,
        }) => (code, signal, timed_out),
        _ if collected.backstop_killed => (None, Some(libc::SIGKILL), true),
        _ => {
            return Err(RunError::Refused(format!(
                "the sandbox's helper ended the run without reporting (wait status {:#x}): was it \
                 killed from outside, or is the helper binary from another version?",
                collected.child_status
            )))
        }
    };
    Ok(RunOutput {
        code,
        signal,
        timed_out,
        stdout: collected.stdout,
        stderr: collected.stderr,
        stdout_truncated: collected.stdout_truncated,
        stderr_truncated: collected.stderr_truncated,
        plan,
        elapsed: start.elapsed(),
        egress,
        helper_cpu: collected.helper_cpu,
    })
}

fn run_unconfined(
    policy: &ToolPolicy,
    program: &Path,
    argv: &[OsString],
    opts: &RunOptions,
    env: Vec<(OsString, OsString)>,
    start: Instant,
) -> Result<RunOutput, RunError> {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = std::process::Command::new(program);
    cmd.args(&argv[1..]).env_clear().envs(env);
    if let Some(c) = &opts.cwd {
        cmd.current_dir(c);
    }
    let capture = opts.stdio == Stdio::Capture;
    if capture {
        cmd.stdin(std::process::Stdio::null());
    }
    let out = if capture {
        cmd.output()
    } else {
        cmd.status().map(|status| std::process::Output {
            status,
            stdout: Vec::new(),
            stderr: Vec::new(),
        })
    }
    .map_err(|e| RunError::Exec {
        message: format!("{}: {e}", program.display()),
        code: 126,
    })?;
    let mut plan = Plan::new(policy, Profile::Hardened, HostSupport::cached());
    plan.rules = vec![crate::plan::RuleReport {
        rule: "everything".into(),
        declared: false,
        enforcement: crate::plan::Enforcement::NotEnforced {
            reason: "the caller asked for an unconfined run".into(),
        },
        by: Vec::new(),
    }];
    let cap = policy.limits.max_output_bytes.map(|c| c as usize);
    let cut = |mut v: Vec<u8>| {
        let t = cap.is_some_and(|c| v.len() > c);
        if let Some(c) = cap {
            v.truncate(c);
        }
        (v, t)
    };
    let (stdout, stdout_truncated) = cut(out.stdout);
    let (stderr, stderr_truncated) = cut(out.stderr);
    Ok(RunOutput {
        code: out.status.code(),
        signal: out.status.signal(),
        timed_out: false,
        stdout,
        stderr,
        stdout_truncated,
        stderr_truncated,
        plan: Arc::new(plan),
        elapsed: start.elapsed(),
        egress: Vec::new(),
        helper_cpu: None,
    })
}

/// What every confined process may touch beyond its policy: the harmless devices (read and
/// write) and `/proc` (read only). Shared by the runner and `confine_self`, so the two grant
/// the same.
pub(crate) fn system_rules() -> impl Iterator<Item = PathRule> {
    DEVICES
        .iter()
        .map(|dev| PathRule {
            path: (*dev).into(),
            read: true,
            write: true,
            exec: false,
            optional: true,
        })
        .chain(std::iter::once(PathRule {
            path: "/proc".into(),
            read: true,
            write: false,
            exec: false,
            optional: false,
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_interpreter_of_a_dynamic_binary() {
        let sh = crate::plan::resolve_program(Path::new("sh"), None).unwrap();
        let sh = std::fs::canonicalize(sh).unwrap();
        let interp = interpreter_of(&sh).expect("sh is dynamically linked");
        assert!(
            interp.to_string_lossy().contains("ld-linux"),
            "{}",
            interp.display()
        );
    }

    #[test]
    fn env_filter_keeps_only_allowed_names() {
        let policy =
            ToolPolicy::from_json_str("p", r#"{"env": {"allow": ["HOME", "AWS_*"]}}"#).unwrap();
        let plan = Plan::new(&policy, Profile::Strict, &HostSupport::assume_full());
        let env = filtered_env(
            &plan,
            vec![
                ("HOME".into(), "/h".into()),
                ("AWS_REGION".into(), "x".into()),
                ("SECRET".into(), "s".into()),
            ],
        );
        let names: Vec<_> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["HOME", "AWS_REGION"]);
    }

    #[test]
    fn a_policy_passing_no_variable_reads_only_path_from_the_process() {
        let names = |policy: &str, opts: &RunOptions| -> Vec<OsString> {
            let policy = ToolPolicy::from_json_str("p", policy).unwrap();
            let mut names: Vec<_> = source_env(&policy, opts)
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            names.sort();
            names
        };
        let path: Vec<OsString> = std::env::var_os("PATH")
            .map(|_| "PATH".into())
            .into_iter()
            .collect();
        let mut all: Vec<OsString> = std::env::vars_os().map(|(k, _)| k).collect();
        all.sort();
        assert!(
            all.len() > path.len(),
            "the test process has variables besides PATH"
        );
        let deny = r#"{"env": "deny"}"#;
        assert_eq!(names(deny, &RunOptions::default()), path);
        // The filter still decides what the command gets; these read the whole environment.
        assert_eq!(
            names(r#"{"env": {"allow": ["HOME"]}}"#, &RunOptions::default()),
            all
        );
        assert_eq!(names(r#"{}"#, &RunOptions::default()), all);
        assert_eq!(names(deny, &RunOptions::default().unconfined()), all);
        let given =
            RunOptions::default().env(vec![("A".into(), "1".into()), ("PATH".into(), "/x".into())]);
        assert_eq!(names(deny, &given), ["A", "PATH"].map(OsString::from));
    }

    #[test]
    fn refusal_happens_before_anything_starts() {
        let policy =
            ToolPolicy::from_json_str("p", r#"{"net": {"hosts": ["example.com:443"]}}"#).unwrap();
        let opts = RunOptions::default()
            .profile(Profile::Hardened)
            .helper("/nonexistent/helper-is-never-started");
        let err = run(&policy, &["true".into()], &opts).unwrap_err();
        assert!(matches!(err, RunError::Refused(_)), "{err:?}");
        assert_eq!(err.exit_code(), 125);
    }
}
