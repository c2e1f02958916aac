//! Confining the calling process itself: [`confine_self`].
//!
//! An agent confines itself under the union of its tools' policies
//! ([`policy_runtime::union::union`]); every thread and process it starts afterwards inherits
//! the confinement, and nothing can lift it. The mechanisms are the hardened profile's, which
//! need no namespace: capabilities dropped for good (securebits, bounding set), NO_NEW_PRIVS,
//! Landlock (filesystem, TCP ports, abstract-socket and signal scopes) and the hardened seccomp
//! filter (no ptrace, mount, namespaces, kernel keyring, ...). Core dumps are turned off.
//!
//! What it reports ([`Confinement::plan`], the runner's [`Plan`] type) differs from a hardened
//! run where the process confines itself rather than being started:
//!
//! * `fs.read`/`fs.write`: as in hardened (a literal-file glob is exact when the file exists, a
//!   wildcard glob widens to its directory; metadata calls reach every host path). Nothing is
//!   given a scratch directory: an unspecified `fs.write` grants nothing.
//! * `exec = "deny"`: exact. Landlock's execute right is granted nowhere, so every `execve` fails
//!   (the dynamic loader included: it is a file to execute like any other), and `memfd_create`
//!   is answered `ENOSYS` (a memfd lies outside every Landlock hierarchy).
//! * `exec = {allow = [...]}`: widened. The listed programs and their ELF interpreters are
//!   executable; since the dynamic loader must be, `ld.so PROGRAM` still starts any program
//!   the roots let the process read.
//! * `net`: `deny` refuses `socket()` (seccomp) and every TCP bind and connect (Landlock); a host
//!   list becomes TCP connect to its ports at any address (Landlock matches ports only), and
//!   UDP is not governed at all: widened. Pathname unix sockets stay reachable unless
//!   `net = "deny"` (Landlock governs their `connect` only from ABI 9, and without a mount
//!   namespace nothing hides them).
//! * `env`: the process's own environment is filtered, so its children inherit only the
//!   variables the policy keeps.
//! * `limits` bound one run of a tool; a process confining itself has no run. A policy that
//!   declares any is refused: clear `limits` first (the union keeps a limit only when every
//!   tool declares one).
//! * Protected paths ([`policy_runtime::protected`]): exact when no write root covers them;
//!   Landlock cannot take back a right beneath a directory it granted, so a protected path
//!   inside a write root is refused (remove it from the list, or narrow the write glob).
//!
//! **Nothing is applied until everything is known to be enforceable**: the plan is checked, the
//! Landlock ruleset is built with every path opened and every right requested, the seccomp
//! program is compiled, and only then are the steps applied, in an order where each remaining
//! step is a system call that has no reason to fail. If one fails anyway, the error says what
//! was applied ([`ConfineError::Partial`]).
//!
//! Landlock and NO_NEW_PRIVS confine the calling thread only (Landlock ABI 7 cannot confine
//! sibling threads), so a process with more than one thread is refused: confine before starting
//! threads.
//!
//! A confined process cannot run the strict profile for its tools: Landlock refuses `mount` to
//! a confined process and the filter refuses new namespaces. Start tools through a runner
//! process started before confining (the demo agent does so), or use the hardened profile.
//!
//! ```no_run
//! use policy_runtime::{union::union, ToolPolicy};
//! use sandbox::{confine::confine_self, Profile};
//!
//! let read = ToolPolicy::from_json_str("read", r#"{"fs": {"read": ["/srv/data/**"]}, "net": "deny", "exec": "deny"}"#)?;
//! let write = ToolPolicy::from_json_str("write", r#"{"fs": {"write": ["/srv/out/**"]}, "net": "deny", "exec": "deny"}"#)?;
//! let confinement = confine_self(&union([&read, &write]), Profile::Hardened)?;
//! println!("{}", confinement.plan.report_json());
//! // From here on, this process and its children can write only under /srv/out.
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use policy_runtime::protected::ProtectedPaths;
use policy_runtime::ToolPolicy;

use crate::hostcaps::HostSupport;
use crate::landlock_rules::{negotiated_abi, LandlockSpec, PathRule};
use crate::plan::{Enforcement, ExecPlan, NetPlan, Plan, Profile};
use crate::seccomp::{self, FilterOptions};

/// The confinement in force: the report of what is enforced, exactly or widened.
#[derive(Clone, Debug)]
pub struct Confinement {
    /// The report (profile `hardened`: the mechanisms without namespaces).
    pub plan: Plan,
}

/// A step of [`confine_self`], in the order they are applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Capabilities dropped (securebits, bounding and ambient sets, current sets).
    Capabilities,
    /// PR_SET_NO_NEW_PRIVS.
    NoNewPrivs,
    /// The Landlock ruleset enforced.
    Landlock,
    /// RLIMIT_CORE 0.
    CoreDumps,
    /// The seccomp filter installed.
    Seccomp,
    /// The environment filtered.
    Environment,
}

/// Why the process was not confined.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// The host or profile cannot enforce the policy. Nothing was applied.
    #[error("confine_self refused, nothing was applied: {reason}")]
    Refused {
        /// Every rule that cannot be enforced, with why.
        reason: String,
        /// The report, with the rules that cannot be enforced marked `not_enforced` (`None`
        /// when the refusal came before a plan).
        plan: Option<Box<Plan>>,
    },
    /// The process runs other threads, which Landlock would not confine. Nothing was applied.
    #[error("confine_self refused, nothing was applied: this process runs {threads} threads, and Landlock confines only the calling one; confine before starting threads")]
    Threads {
        /// How many threads the process runs.
        threads: usize,
    },
    /// A step failed after the earlier ones were applied (the checks passed; the kernel then
    /// refused a call it had no reason to refuse).
    #[error("confine_self failed at {failed:?} after applying {applied:?}: {error}")]
    Partial {
        /// What is in force.
        applied: Vec<Step>,
        /// The step that failed.
        failed: Step,
        /// The kernel's answer.
        error: String,
    },
}

/// Confines the calling process (and every process it starts) under `policy`, with the
/// protected paths of this process ([`policy_runtime::protected::process_list`]); see the
/// [module](self). Only [`Profile::Hardened`] is accepted: the strict profile's namespaces and
/// mounts cannot be entered by a running process that keeps its threads and descriptors.
///
/// # Errors
///
/// [`ConfineError::Refused`] or [`ConfineError::Threads`] with nothing applied, or
/// [`ConfineError::Partial`].
pub fn confine_self(policy: &ToolPolicy, profile: Profile) -> Result<Confinement, ConfineError> {
    confine_self_with(policy, profile, &policy_runtime::protected::process_list())
}

/// [`confine_self`] with an explicit protected list.
///
/// # Errors
///
/// As [`confine_self`].
pub fn confine_self_with(
    policy: &ToolPolicy,
    profile: Profile,
    protected: &ProtectedPaths,
) -> Result<Confinement, ConfineError> {
    let prepared = prepare(policy, profile, protected, HostSupport::cached())?;
    prepared.apply()
}

/// The report [`confine_self`] would return, or why it would refuse, without applying anything.
///
/// # Errors
///
/// [`ConfineError::Refused`] as [`confine_self`] (threads are not counted).
pub fn plan_self(
    policy: &ToolPolicy,
    profile: Profile,
    protected: &ProtectedPaths,
) -> Result<Plan, ConfineError> {
    let plan = self_plan(policy, profile, protected, HostSupport::cached())?;
    match refusal(&plan) {
        Some(reason) => Err(ConfineError::Refused {
            reason,
            plan: Some(Box::new(plan)),
        }),
        None => Ok(plan),
    }
}

struct Prepared {
    plan: Plan,
    ruleset: crate::landlock_rules::PreparedRuleset,
    filter: Vec<libc::sock_filter>,
    env: Option<Vec<String>>,
}

fn refused(reason: impl Into<String>) -> ConfineError {
    ConfineError::Refused {
        reason: reason.into(),
        plan: None,
    }
}

/// Everything checked, built and compiled; nothing applied.
fn prepare(
    policy: &ToolPolicy,
    profile: Profile,
    protected: &ProtectedPaths,
    host: &HostSupport,
) -> Result<Prepared, ConfineError> {
    let threads = thread_count().map_err(|e| {
        refused(format!(
            "counting this process's threads in /proc/self/task: {e}"
        ))
    })?;
    if threads != 1 {
        return Err(ConfineError::Threads { threads });
    }
    let plan = self_plan(policy, profile, protected, host)?;
    if let Some(reason) = refusal(&plan) {
        return Err(ConfineError::Refused {
            reason,
            plan: Some(Box::new(plan)),
        });
    }
    let exec_allow = plan.exec == ExecPlan::Allow;
    let mut paths = Vec::new();
    for root in &plan.roots {
        let path = match std::fs::canonicalize(&root.path) {
            Ok(c) if root.declared && c != root.path => {
                return Err(refused(format!(
                    "fs root {} resolves through a symlink to {}; declare the real path",
                    root.path.display(),
                    c.display()
                )))
            }
            Ok(c) => c,
            Err(_) => root.path.clone(),
        };
        paths.push(PathRule {
            path,
            read: true,
            write: root.write,
            exec: exec_allow,
            optional: true,
        });
    }
    if let ExecPlan::Programs(list) = &plan.exec {
        let mut executables = Vec::new();
        for program in list {
            add_with_interpreters(&mut executables, program);
        }
        for exe in executables {
            paths.push(PathRule {
                path: std::fs::canonicalize(&exe).unwrap_or(exe),
                read: true,
                write: false,
                exec: true,
                optional: false,
            });
        }
    }
    paths.extend(crate::runner::system_rules());
    let connect_ports = match &plan.net {
        NetPlan::Hosts(hosts) => {
            let mut ports: Vec<u16> = hosts
                .iter()
                .filter_map(|h| match h.port {
                    policy_runtime::host::PortMatch::Port(p) => Some(p),
                    policy_runtime::host::PortMatch::Any => None,
                })
                .collect();
            ports.sort_unstable();
            ports.dedup();
            ports
        }
        _ => Vec::new(),
    };
    let any_port = matches!(&plan.net, NetPlan::Hosts(h) if h.iter().any(|h| h.port == policy_runtime::host::PortMatch::Any));
    let spec = LandlockSpec {
        abi: negotiated_abi(plan.landlock_abi),
        paths,
        restrict_connect: plan.net != NetPlan::Allow && !any_port,
        connect_ports,
        bind_ports: if plan.net == NetPlan::Allow {
            vec![0]
        } else {
            Vec::new()
        },
        unix_connect_beneath: None,
    };
    let ruleset = crate::landlock_rules::prepare(&spec).map_err(refused)?;
    let filters = seccomp::compile(FilterOptions {
        exec_notify: false,
        deny_sockets: plan.net == NetPlan::Deny,
        restrict_socket_families: plan.net != NetPlan::Allow,
        deny_memfd: plan.exec != ExecPlan::Allow,
        shares_host_namespaces: true,
        deny_metadata_writes: !plan.host_metadata_writable(),
        supervise_unix: false,
        keep_process_group: false,
        relay_execs: false,
    })
    .map_err(refused)?;
    Ok(Prepared {
        env: plan.env.clone(),
        filter: seccomp::unpack(&filters.program),
        ruleset,
        plan,
    })
}

impl Prepared {
    fn apply(self) -> Result<Confinement, ConfineError> {
        // A hardened zygote started before would stay an unconfined server this process could
        // still use: end it; the next hardened run starts one that inherits the confinement.
        crate::zygote::shut_down();
        let mut applied = Vec::new();
        let fail = |applied: &Vec<Step>, failed: Step, error: String| ConfineError::Partial {
            applied: applied.clone(),
            failed,
            error,
        };
        crate::child::drop_capabilities().map_err(|e| fail(&applied, Step::Capabilities, e))?;
        applied.push(Step::Capabilities);
        // SAFETY: prctl with integers.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            let e = std::io::Error::last_os_error().to_string();
            return Err(fail(&applied, Step::NoNewPrivs, e));
        }
        applied.push(Step::NoNewPrivs);
        self.ruleset
            .enforce()
            .map_err(|e| fail(&applied, Step::Landlock, e))?;
        applied.push(Step::Landlock);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setrlimit with a valid struct.
        if unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core) } != 0 {
            let e = std::io::Error::last_os_error().to_string();
            return Err(fail(&applied, Step::CoreDumps, e));
        }
        applied.push(Step::CoreDumps);
        seccomp::install(&self.filter, false)
            .map_err(|e| fail(&applied, Step::Seccomp, e.to_string()))?;
        applied.push(Step::Seccomp);
        if let Some(patterns) = &self.env {
            let all: Vec<(OsString, OsString)> = std::env::vars_os().collect();
            let kept = crate::runner::filter_env(Some(patterns), all.clone());
            for (name, _) in all {
                if !kept.iter().any(|(k, _)| *k == name) {
                    // The process has one thread (checked before anything was applied).
                    std::env::remove_var(&name);
                }
            }
        }
        Ok(Confinement { plan: self.plan })
    }
}

/// The threads of this process.
fn thread_count() -> std::io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}

/// Adds a program and, recursively, its interpreter (ELF `PT_INTERP` or `#!`).
fn add_with_interpreters(out: &mut Vec<PathBuf>, program: &Path) {
    let mut next = Some(program.to_path_buf());
    let mut depth = 0;
    while let Some(path) = next.take() {
        if depth > 4 || out.contains(&path) {
            break;
        }
        next = crate::runner::interpreter_of(&path);
        out.push(path);
        depth += 1;
    }
}

/// Why the plan cannot be applied: the runner's refusal, plus every protected path a write root
/// covers.
fn refusal(plan: &Plan) -> Option<String> {
    let mut reasons: Vec<String> = plan.refusal().into_iter().collect();
    for p in &plan.protected {
        if let Enforcement::NotEnforced { reason } = &p.enforcement {
            reasons.push(format!("protected path {}: {reason}", p.path.display()));
        }
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// The hardened plan, rewritten for a process that confines itself.
fn self_plan(
    policy: &ToolPolicy,
    profile: Profile,
    protected: &ProtectedPaths,
    host: &HostSupport,
) -> Result<Plan, ConfineError> {
    if profile != Profile::Hardened {
        return Err(refused(format!(
            "the {profile} profile needs user, mount and pid namespaces, which a running process cannot enter with its threads and open descriptors (and Landlock refuses mount to a confined process); confine_self applies the hardened profile's mechanisms: ask for `hardened`"
        )));
    }
    let mut plan = Plan::new(policy, Profile::Hardened, host);
    plan.scratch = false;
    let mut rules = Vec::new();
    for mut r in std::mem::take(&mut plan.rules) {
        let rule = r.rule.as_str();
        if rule.starts_with("fs.write (unspecified)") {
            r.rule = "fs.write (unspecified): nothing".into();
        } else if rule
            == "HOME and XDG directories outside the read roots point at the scratch directory"
            || rule == "dies with its parent"
        {
            // A runner's measures for the process it starts: none here.
            continue;
        } else if rule.starts_with("limits.") {
            r.enforcement = Enforcement::NotEnforced {
                reason: "limits bound one run of a tool, and a process confining itself has no run; clear `limits` (a runner applies them to each tool it starts)".into(),
            };
            r.by.clear();
        } else if rule.starts_with("exec allow [") {
            r.enforcement = Enforcement::Widened {
                to: "the listed programs and their interpreters; since the dynamic loader is one of them, `ld.so PROGRAM` starts any program the fs roots let this process read".into(),
            };
            r.by = vec![
                "landlock-execute".into(),
                "seccomp (memfd_create answered ENOSYS)".into(),
            ];
        } else if rule == "exec deny" {
            r.by = vec![
                "landlock-execute (granted on no file, the dynamic loader included)".into(),
                "seccomp (memfd_create answered ENOSYS)".into(),
            ];
        } else if rule.starts_with("net hosts [") {
            let ports = match &plan.net {
                NetPlan::Hosts(h) => h
                    .iter()
                    .map(|h| match h.port {
                        policy_runtime::host::PortMatch::Port(p) => p.to_string(),
                        policy_runtime::host::PortMatch::Any => "any".into(),
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => String::new(),
            };
            r.enforcement = Enforcement::Widened {
                to: format!("TCP connect to port(s) {ports} at any address (Landlock matches ports, not hosts), and UDP to any address and port (Landlock does not govern UDP)"),
            };
            r.by = vec!["landlock-tcp".into(), "landlock-scope".into()];
        }
        rules.push(r);
    }
    plan.rules = rules;
    plan.rules.push(crate::plan::RuleReport {
        rule: "every thread and child process inherits the confinement".into(),
        declared: false,
        enforcement: Enforcement::Exact,
        by: vec![
            "landlock domain and seccomp filter of the only thread, inherited across fork and execve".into(),
            "no new privileges".into(),
        ],
    });
    plan.protected = crate::plan::protected_rules(&plan.roots, protected, Profile::Hardened);
    Ok(plan)
}
