//! The enforcement plan: what the OS sandbox will do for each rule of a [`ToolPolicy`].
//!
//! A plan is computed once per policy and profile (see [`crate::runner`] for the cache). Every
//! declared rule appears in [`Plan::rules`] with how it is enforced:
//!
//! * [`Enforcement::Exact`]: the kernel enforces what the rule says;
//! * [`Enforcement::Widened`]: the kernel enforces something wider (a glob enforced as its
//!   directory tree; a per-tree limit enforced per process);
//! * [`Enforcement::NotEnforced`]: this host or profile cannot enforce it. A plan with a
//!   declared rule that is not enforced is refused ([`Plan::refusal`]).
//!
//! The sandbox's own protections (namespaces, hidden sockets, ...) are listed too, with
//! `declared: false`, so an audit event shows everything that confined the run.
//!
//! ```
//! use policy_runtime::ToolPolicy;
//! use sandbox::plan::{Enforcement, Plan, Profile};
//! use sandbox::hostcaps::HostSupport;
//!
//! let policy = ToolPolicy::from_json_str("p", r#"{"fs": {"read": ["/data/*.csv"], "write": ["/out/**"]}}"#)?;
//! let plan = Plan::new(&policy, Profile::Strict, &HostSupport::assume_full());
//! let read = plan.rules.iter().find(|r| r.rule == "fs.read /data/*.csv").unwrap();
//! assert_eq!(read.enforcement, Enforcement::Widened { to: "/data/**".into() });
//! let write = plan.rules.iter().find(|r| r.rule == "fs.write /out/**").unwrap();
//! assert_eq!(write.enforcement, Enforcement::Exact);
//! assert!(plan.refusal().is_none());
//! # Ok::<(), policy_runtime::LoadError>(())
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use policy_runtime::os_grant::OsGrant;
use policy_runtime::policy::{Limits, Stance};
use policy_runtime::protected::{ProtectedKind, ProtectedPath, ProtectedPaths};
use policy_runtime::{Glob, HostPattern, ToolPolicy};
use serde::{Deserialize, Serialize};

use crate::hostcaps::HostSupport;

/// Which set of mechanisms confines the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// User, mount, pid (and network) namespaces plus Landlock, seccomp and rlimits.
    Strict,
    /// Landlock, seccomp, rlimits and NO_NEW_PRIVS without namespaces; for hosts without user
    /// namespaces, and only when asked for by name.
    Hardened,
}

impl Profile {
    /// The lowercase name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Strict => "strict",
            Profile::Hardened => "hardened",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Profile, String> {
        match s {
            "strict" => Ok(Profile::Strict),
            "hardened" => Ok(Profile::Hardened),
            other => Err(format!(
                "unknown profile `{other}`: expected `strict` or `hardened`"
            )),
        }
    }
}

/// How one rule is enforced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Enforcement {
    /// Enforced as declared.
    Exact,
    /// Enforced as something wider, described by `to`.
    Widened {
        /// What the kernel actually enforces.
        to: String,
    },
    /// Not enforced on this host or profile.
    NotEnforced {
        /// Why, and what would fix it.
        reason: String,
    },
}

/// One line of the enforcement report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleReport {
    /// The rule, e.g. `fs.write /out/**`, `net deny`, `limits.max_processes 64`.
    pub rule: String,
    /// Whether the policy declared it (`false`: a protection the sandbox adds on its own).
    pub declared: bool,
    /// How it is enforced.
    #[serde(flatten)]
    pub enforcement: Enforcement,
    /// The kernel mechanisms that enforce it.
    pub by: Vec<String>,
}

/// A directory tree or file the sandbox makes visible.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsRoot {
    /// The path as the policy (after widening) names it.
    pub path: PathBuf,
    /// Read-write rather than read-only.
    pub write: bool,
    /// From the policy (`false`: the system defaults). A declared root must not resolve
    /// through a symlink: a tool that can write above another tool's root could otherwise
    /// point it anywhere.
    pub declared: bool,
}

/// What the plan does about starting programs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecPlan {
    /// Only the tool itself is ever executed.
    Deny,
    /// Any program that is readable.
    Allow,
    /// The tool and these resolved programs.
    Programs(Vec<PathBuf>),
}

/// What the plan does about the network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetPlan {
    /// No network.
    Deny,
    /// The host's network.
    Allow,
    /// Only these endpoints, through the egress broker.
    Hosts(Vec<HostPattern>),
}

/// How the process limit is enforced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessLimit {
    /// No limit declared.
    None,
    /// A pids cgroup created under this directory.
    Cgroup(u64),
    /// RLIMIT_NPROC (non-root runners only).
    Rlimit(u64),
}

/// How the memory limit is enforced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryLimit {
    /// No limit declared.
    None,
    /// A memory cgroup of the whole tree (tmpfs and shared memory included), plus RLIMIT_AS
    /// per process.
    Cgroup(u64),
    /// RLIMIT_AS per process only, and the sandbox's tmpfs sized to the limit.
    Rlimit(u64),
}

/// The smallest `limits.memory_bytes` the sandbox accepts. The limit is also RLIMIT_AS, which
/// counts address space: the loader, libc and the stack of even `/bin/true` take about 4 MiB,
/// and a program started under less is killed by SIGSEGV before it can say why.
pub const MIN_MEMORY_BYTES: u64 = 8 << 20;

/// The smallest `limits.max_open_files` (RLIMIT_NOFILE) the sandbox accepts: the three standard
/// streams, one descriptor for the dynamic loader to open libraries, and the sandbox's own
/// set-up, which holds its status pipe, the seccomp notification listener and the socket that
/// hands the listener over when the limit is already in force.
pub const MIN_OPEN_FILES: u64 = 8;

/// The size of the strict profile's private tmpfs (`/tmp` and `/dev/shm` share it) when the
/// policy declares no `limits.memory_bytes`: 1 GiB.
pub const DEFAULT_SCRATCH_BYTES: u64 = 1 << 30;

/// The size of the strict profile's private tmpfs: `limits.memory_bytes` when declared (a
/// tool cannot keep more in files than it may hold in memory), else [`DEFAULT_SCRATCH_BYTES`].
/// tmpfs pages are not address space, so RLIMIT_AS alone would not bound them.
pub fn scratch_bytes(limits: &Limits) -> u64 {
    limits.memory_bytes.unwrap_or(DEFAULT_SCRATCH_BYTES)
}

/// Why a declared root cannot show the host tree it names in the strict profile: `/proc` is
/// the pid namespace's own and `/dev` the curated one. `None` when it can.
///
/// A root inside either tree is refused. A root above them (a glob widened to `/`, `/**`) is
/// refused when the glob names the tree or a usual path in it; a widened glob such as
/// `/*.txt` names nothing there and runs.
fn replaced_by_sandbox(glob: &Glob, root: &Path) -> Option<String> {
    const OWN: [(&str, &[&str]); 2] = [
        (
            "/proc",
            &[
                "/proc",
                "/proc/self/status",
                "/proc/1/environ",
                "/proc/sys/x",
            ],
        ),
        (
            "/dev",
            &[
                "/dev",
                "/dev/null",
                "/dev/tty",
                "/dev/sda",
                "/dev/shm/x",
                "/dev/pts/0",
                "/dev/mqueue/x",
            ],
        ),
    ];
    let (tree, _) = OWN.iter().find(|(tree, samples)| {
        root.starts_with(tree)
            || (Path::new(tree).starts_with(root) && samples.iter().any(|p| glob.is_match(p)))
    })?;
    Some(format!(
        "the strict profile shows its own {tree} (host processes and devices stay hidden), not the host's; declare paths outside /proc and /dev, or use the hardened profile"
    ))
}

/// Reports `limits.memory_bytes` and decides how it is held.
fn memory_rule(
    b: &mut Builder,
    value: Option<u64>,
    profile: Profile,
    host: &HostSupport,
) -> MemoryLimit {
    let Some(v) = value else {
        return MemoryLimit::None;
    };
    let rule = format!("limits.memory_bytes {v}");
    if v < MIN_MEMORY_BYTES {
        b.rule(
            &rule,
            true,
            Enforcement::NotEnforced {
                reason: format!(
                    "{v} bytes is below {MIN_MEMORY_BYTES} ({} MiB), the least a program starts with: the limit is also the address space (RLIMIT_AS) of each process, and the loader, libc and stack need about 4 MiB before the program runs",
                    MIN_MEMORY_BYTES >> 20
                ),
            },
            &[],
        );
        return MemoryLimit::None;
    }
    match &host.memory_cgroup {
        Some(cg) if !crate::cgroup::swap_escapes(cg) => {
            let mut by = vec![
                "memory cgroup (whole tree: processes, tmpfs, shared memory, page cache, swap)",
                "RLIMIT_AS per process",
            ];
            if profile == Profile::Strict {
                by.push("sized tmpfs /tmp and /dev/shm");
            }
            b.rule(&rule, true, Enforcement::Exact, &by);
            MemoryLimit::Cgroup(v)
        }
        found => {
            let why = if found.is_some() {
                "the memory cgroup does not account swap (boot with swapaccount=1)"
            } else if host.euid == 0 {
                "no writable memory cgroup (mount the v1 `memory` controller or enable `+memory` in the v2 root's cgroup.subtree_control)"
            } else {
                "memory cgroups are used by root runners only"
            };
            let to = match profile {
                Profile::Strict => format!("RLIMIT_AS {v} for each process, and /tmp and /dev/shm together at most {v} bytes; not counted: the sum over processes, memfd and SysV shared memory segments (shmget: kept after shmdt, so one process holds any number of them) outside that tmpfs, page cache, kernel memory ({why})"),
                Profile::Hardened => format!("RLIMIT_AS {v} for each process; not counted: the sum over processes, files in memory-backed file systems (the host's tmpfs, memfd), page cache, kernel memory ({why})"),
            };
            b.rule(&rule, true, Enforcement::Widened { to }, &["RLIMIT_AS"]);
            MemoryLimit::Rlimit(v)
        }
    }
}

/// The enforcement plan of one policy under one profile.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    /// The profile.
    pub profile: Profile,
    /// Declared roots, widened to what the kernel enforces, plus the system defaults.
    pub roots: Vec<FsRoot>,
    /// Whether the tool gets a private writable scratch `/tmp` (strict) or scratch dir.
    pub scratch: bool,
    /// Starting programs.
    pub exec: ExecPlan,
    /// Network.
    pub net: NetPlan,
    /// Environment: `None` inherits.
    pub env: Option<Vec<String>>,
    /// Declared limits.
    pub limits: Limits,
    /// How `limits.max_processes` is held.
    pub process_limit: ProcessLimit,
    /// How `limits.memory_bytes` is held.
    pub memory_limit: MemoryLimit,
    /// Strict: a declared root holds `/tmp`, so the tool sees the host's `/tmp` (with the
    /// declared rights) instead of a private one.
    pub host_tmp: bool,
    /// Strict: the size of the tmpfs behind the private `/tmp` and `/dev/shm` (one budget for
    /// both), see [`scratch_bytes`].
    pub scratch_bytes: u64,
    /// The Landlock ABI the rules are built for.
    pub landlock_abi: i32,
    /// Hardened: the seccomp filter leaves the metadata writes open (see
    /// [`Plan::host_metadata_writable`]).
    pub metadata_writes_open: bool,
    /// The report, one line per rule.
    pub rules: Vec<RuleReport>,
    /// Each protected path ([`policy_runtime::protected`]) and how it stays unwritable.
    #[serde(default)]
    pub protected: Vec<ProtectedRule>,
}

/// How one protected path stays unwritable in a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedRule {
    /// The protected path.
    pub path: PathBuf,
    /// What it is.
    pub kind: ProtectedKind,
    /// The whole tree beneath it is protected.
    pub tree: bool,
    /// The write root that covers it (holds it, or lies inside its tree), if any.
    pub write_root: Option<PathBuf>,
    /// How it is enforced.
    #[serde(flatten)]
    pub enforcement: Enforcement,
    /// The mechanisms that enforce it.
    pub by: Vec<String>,
}

/// The write root (declared, widened as the kernel grants it) that covers a protected entry:
/// one that holds it, or one inside a protected tree. Both the root as declared and its
/// canonical form are compared, since the protected list names paths as the runner does.
pub fn covering_write_root<'a>(roots: &'a [FsRoot], entry: &ProtectedPath) -> Option<&'a FsRoot> {
    roots.iter().filter(|r| r.write).find(|r| {
        let canonical = crate::canonical::canonicalize(&r.path).ok();
        [Some(r.path.clone()), canonical]
            .into_iter()
            .flatten()
            .any(|root| {
                entry.path.starts_with(&root) || (entry.tree && root.starts_with(&entry.path))
            })
    })
}

/// The protected rows of a runner's plan: a protected path no write root covers stays
/// unwritable (strict: outside the write binds, which are the only writable mounts; hardened:
/// Landlock grants no write right there). One a write root covers is kept by a read-only
/// mount in strict when it can be (see `runner::keep_protected`); otherwise, and always in
/// hardened, it is not enforced: Landlock rules add rights beneath a directory and cannot take
/// them back below it.
pub(crate) fn protected_rules(
    roots: &[FsRoot],
    list: &ProtectedPaths,
    profile: Profile,
) -> Vec<ProtectedRule> {
    list.entries()
        .iter()
        .map(|entry| {
            let covering = covering_write_root(roots, entry);
            let (enforcement, by) = match covering {
                None => (
                    Enforcement::Exact,
                    match profile {
                        Profile::Strict => vec!["mount-ns (outside every write bind)".to_string(), "landlock (no write right there)".to_string()],
                        Profile::Hardened => vec!["landlock (no write right there)".to_string()],
                    },
                ),
                Some(root) => (
                    Enforcement::NotEnforced {
                        reason: format!(
                            "the write root {} covers it, and Landlock cannot take a right back beneath a directory it granted (and no read-only mount is laid over it); narrow the write glob, or remove the path from the protected list if the tool may change it",
                            root.path.display()
                        ),
                    },
                    Vec::new(),
                ),
            };
            let mut rule = ProtectedRule {
                path: entry.path.clone(),
                kind: entry.kind,
                tree: entry.tree,
                write_root: covering.map(|r| r.path.clone()),
                enforcement,
                by,
            };
            if profile == Profile::Strict {
                // Strict lays a read-only mount over it (the runner's mount list holds it).
                crate::runner::keep_protected(&mut rule, false);
            }
            rule
        })
        .collect()
}

/// Read-only system paths every program needs (its libraries and the loader's files). Never
/// the user's home, `/root`, `/run` or `/var`.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/hosts",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
];

/// The device nodes of the curated `/dev`.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// What the hardened profile leaves open whatever the policy says: `(rule, summary, reason)`.
/// Each is a line of every hardened report (`not_enforced`, not declared, so the run is not
/// refused for it) and of `policy-sandbox run --help`.
pub const HARDENED_LEAVES_OPEN: &[(&str, &str, &str)] = &[
    (
        "host processes invisible",
        "other processes and their command lines (/proc/PID/cmdline)",
        "without a pid namespace the tool sees every host process and its command line \
         (/proc/PID/cmdline); Landlock keeps their memory, environment and signals out of reach, \
         but Landlock rules name inodes, and the tool's own /proc/PID does not exist before it \
         starts: no read rule hides other processes while leaving a process its own /proc/self",
    ),
    HOST_NETWORK_STATE,
    (
        "metadata of paths outside the roots",
        "stat, access, readlink, getxattr and inotify on every host path; with write roots, chmod, \
         chown, utimes and setxattr on the files the runner's uid owns",
        "Landlock (up to ABI 7) does not govern stat, access, readlink, getxattr, listxattr, \
         inotify, fanotify, chmod, chown, utimes or setxattr, and without a mount namespace \
         nothing hides the paths; seccomp refuses the metadata writes only when no write root is \
         declared",
    ),
];

/// What both profiles leave open for every runner: `(rule, reason)`, a `not_enforced` line of
/// every report. The kernel lists in `/proc/keys` the keys a reader may view, which include
/// those of its own uid, and the tool's uid is the runner's (the host's, under the name 1000 in
/// strict). Hiding the file would take a mount per run (about 20 µs, measured with its
/// teardown); a key's contents stay out of reach, since both profiles' seccomp filters refuse
/// `keyctl`, `add_key` and `request_key`.
///
/// ```
/// use sandbox::hostcaps::HostSupport;
/// use sandbox::plan::{Enforcement, Plan, Profile, KEY_DESCRIPTIONS_LISTED};
/// let policy = policy_runtime::ToolPolicy::default();
/// let plan = Plan::new(&policy, Profile::Strict, &HostSupport::assume_full());
/// let keys = plan.rules.iter().find(|r| r.rule == KEY_DESCRIPTIONS_LISTED.0).unwrap();
/// assert!(matches!(keys.enforcement, Enforcement::NotEnforced { .. }));
/// ```
pub const KEY_DESCRIPTIONS_LISTED: (&str, &str) = (
    "the runner's keys unlisted",
    "/proc/keys and /proc/key-users list the descriptions and owners of the keys the tool's \
     uid may view, which is the runner's (under a root runner, the host root's keys); their \
     contents stay out of reach (seccomp refuses keyctl, add_key and request_key)",
);

/// What both profiles leave open when the runner's user is the host's root
/// ([`HostSupport::host_root`]): `(rule, reason)`, a `not_enforced` line of such a runner's
/// every report.
///
/// The tool then runs as the host's uid 0 without capabilities (uid 1000 of its user namespace
/// in strict). The global `/proc` entries belong to that uid, and a mode bit is all some of them
/// check. Hiding each would take a mount per run (about 20 µs each, measured with its teardown),
/// so the report says so instead, and a non-root runner closes it: its tool is refused them.
///
/// ```
/// use sandbox::hostcaps::HostSupport;
/// use sandbox::plan::{Plan, Profile, ROOT_TOOL_READS_ROOT_PROC};
/// let policy = policy_runtime::ToolPolicy::default();
/// let mut host = HostSupport::assume_full();
/// host.host_root = true;
/// let plan = Plan::new(&policy, Profile::Strict, &host);
/// assert!(plan.rules.iter().any(|r| r.rule == ROOT_TOOL_READS_ROOT_PROC.0));
/// host.host_root = false;
/// let plan = Plan::new(&policy, Profile::Strict, &host);
/// assert!(!plan.rules.iter().any(|r| r.rule == ROOT_TOOL_READS_ROOT_PROC.0));
/// ```
pub const ROOT_TOOL_READS_ROOT_PROC: (&str, &str) = (
    "root-only kernel state in /proc hidden",
    "the runner's user is the host's root, so the tool is the host's uid 0 (without \
     capabilities) and owns the global /proc entries: it reads those whose mode is the only \
     check (/proc/slabinfo, pagetypeinfo, vmallocinfo, timer_list, kpageflags, kpagecount, \
     kpagecgroup and the 0600 sysctls); run the agent as a non-root user to close it",
);

/// What a run without a network namespace of its own leaves open (hardened, and strict under
/// `net = "allow"`): `(rule, summary, reason)`, a `not_enforced` line of its report.
const HOST_NETWORK_STATE: (&str, &str, &str) = (
    "host network state hidden",
    "the host's listening ports and sockets (/proc/net/tcp, tcp6, udp, unix)",
    "without a network namespace /proc/net lists the host's listening ports and sockets; \
     it lies under the tool's own /proc/self/net, so no Landlock read rule can hide it",
);

/// The `--help` text listing [`HARDENED_LEAVES_OPEN`].
pub fn hardened_open_help() -> String {
    let mut text = String::from(
        "The hardened profile (--profile hardened: no namespaces) leaves open, and reports as \
         not_enforced:\n",
    );
    for (_, summary, _) in HARDENED_LEAVES_OPEN {
        text.push_str(&format!("  - {summary}\n"));
    }
    text
}

/// The smallest Landlock ABI the strict profile accepts: 4 brings TCP port rules (needed for
/// host lists). The namespaces cover what later ABIs add: read-only binds stop truncation,
/// the curated `/dev` has no device to misuse, the pid namespace hides host processes from
/// signals and the network namespace hides the host's abstract unix sockets.
pub const MIN_LANDLOCK_ABI: i32 = 4;

/// The smallest Landlock ABI the hardened profile (and strict with net = allow, which has no
/// network namespace to hide abstract sockets) accepts: 6 brings truncate, device ioctl and
/// the abstract-socket and signal scopes.
pub const FULL_LANDLOCK_ABI: i32 = 6;

/// The Landlock ABI a profile needs for a network stance.
pub fn required_landlock_abi(profile: Profile, net: &NetPlan) -> i32 {
    match (profile, net) {
        (Profile::Strict, NetPlan::Deny | NetPlan::Hosts(_)) => MIN_LANDLOCK_ABI,
        _ => FULL_LANDLOCK_ABI,
    }
}

impl Plan {
    /// Computes the plan. Never fails: what cannot be enforced is reported, and
    /// [`Plan::refusal`] says whether the run must be refused.
    pub fn new(policy: &ToolPolicy, profile: Profile, host: &HostSupport) -> Plan {
        let mut b = Builder {
            rules: Vec::new(),
            roots: Vec::new(),
        };
        let strict = profile == Profile::Strict;
        let fs_mech: Vec<&str> = if strict {
            vec!["mount-ns", "landlock"]
        } else {
            vec!["landlock"]
        };

        // Filesystem.
        for (list, write) in [(&policy.fs.read, false), (&policy.fs.write, true)] {
            let key = if write { "fs.write" } else { "fs.read" };
            if let Some(list) = list {
                if list.is_empty() {
                    b.rule(&format!("{key} []"), true, Enforcement::Exact, &fs_mech);
                }
                for glob in list.globs() {
                    let (path, mut enforcement) = enforce_glob(glob);
                    if strict {
                        if let Some(reason) = replaced_by_sandbox(glob, &path) {
                            enforcement = Enforcement::NotEnforced { reason };
                        }
                    }
                    b.rule(&format!("{key} {glob}"), true, enforcement, &fs_mech);
                    b.roots.push(FsRoot {
                        path,
                        write,
                        declared: true,
                    });
                }
            }
        }
        let system: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        let system_text =
            "program, libraries and loader files (/usr, /lib*, /bin, /sbin, a few /etc files)";
        match &policy.fs.read {
            None => b.rule(
                &format!("fs.read (unspecified): {system_text}"),
                true,
                Enforcement::Exact,
                &fs_mech,
            ),
            Some(_) => b.rule(
                "fs.read (implicit)",
                false,
                Enforcement::Widened {
                    to: format!("declared roots plus {system_text}"),
                },
                &fs_mech,
            ),
        }
        for path in system {
            b.roots.push(FsRoot {
                path,
                write: false,
                declared: false,
            });
        }
        // A declared root that holds /tmp shows the host's /tmp as declared; the private one
        // would hide it.
        let host_tmp = strict
            && b.roots
                .iter()
                .any(|r| r.declared && Path::new("/tmp").starts_with(&r.path));
        if policy.fs.write.is_none() {
            b.rule(
                if host_tmp {
                    "fs.write (unspecified): nothing (the read roots hold the host's /tmp, so there is no private /tmp; private /dev/shm only)"
                } else if strict {
                    "fs.write (unspecified): private /tmp and /dev/shm only"
                } else {
                    "fs.write (unspecified): private scratch directory only ($TMPDIR)"
                },
                true,
                Enforcement::Exact,
                &fs_mech,
            );
        }
        if !strict {
            disclose_ungoverned_metadata(&mut b.rules, &b.roots, host.owns_system_files());
        }

        // Network.
        let net_stance = policy.net_stance();
        let net = match net_stance {
            Stance::Nothing => NetPlan::Deny,
            Stance::Anything => NetPlan::Allow,
            Stance::Only(h) => NetPlan::Hosts(h.to_vec()),
        };
        let net_rule = match (net_stance, policy.net.is_none()) {
            (Stance::Nothing, true) => "net (unspecified = deny)".to_string(),
            (Stance::Nothing, false) => "net deny".to_string(),
            (Stance::Anything, _) => "net allow".to_string(),
            (Stance::Only(h), _) => format!(
                "net hosts [{}]",
                h.iter()
                    .map(|h| h.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        match (&net, strict) {
            (NetPlan::Deny, true) => b.rule(
                &net_rule,
                true,
                Enforcement::Exact,
                &[
                    "net-ns (no interface up)",
                    "landlock-tcp bind",
                    "supervised connect (TCP to no port)",
                    "landlock-scope",
                ],
            ),
            (NetPlan::Deny, false) => b.rule(
                &net_rule,
                true,
                Enforcement::Exact,
                &["seccomp socket()", "landlock-tcp", "landlock-scope"],
            ),
            (NetPlan::Allow, _) => b.rule(&net_rule, true, Enforcement::Exact, &[]),
            (NetPlan::Hosts(_), true) => b.rule(
                &net_rule,
                true,
                Enforcement::Exact,
                &[
                    "net-ns",
                    "egress-broker",
                    "landlock-tcp bind",
                    "supervised connect (TCP to the egress ports only)",
                ],
            ),
            (NetPlan::Hosts(_), false) => b.rule(
                &net_rule,
                true,
                Enforcement::NotEnforced {
                    reason: "a host allow-list needs a network namespace and the egress broker; use the strict profile".into(),
                },
                &[],
            ),
        }

        // Programs.
        let exec_stance = policy.exec_stance();
        let exec = match exec_stance {
            Stance::Anything => ExecPlan::Allow,
            Stance::Nothing => ExecPlan::Deny,
            Stance::Only(names) => {
                let writable: Vec<PathBuf> = b
                    .roots
                    .iter()
                    .filter(|r| r.write)
                    .map(|r| {
                        crate::canonical::canonicalize(&r.path).unwrap_or_else(|_| r.path.clone())
                    })
                    .collect();
                ExecPlan::Programs(
                    names
                        .iter()
                        .filter_map(|n| resolve_listed(Path::new(n.as_str()), &writable))
                        .collect(),
                )
            }
        };
        match (exec_stance, policy.exec.is_none()) {
            (Stance::Anything, true) => {
                b.rule("exec (unspecified = allow)", true, Enforcement::Exact, &[])
            }
            (Stance::Anything, false) => b.rule("exec allow", true, Enforcement::Exact, &[]),
            (Stance::Nothing, _) => b.rule(
                "exec deny",
                true,
                Enforcement::Exact,
                &[
                    if strict {
                        "seccomp user-notify (only the first execve)"
                    } else {
                        "seccomp (only the command's own execve, which carries its tail's \
                         secret in its unused registers; the interpreter chain's relays by \
                         user-notify)"
                    },
                    "landlock-execute",
                    "noexec",
                ],
            ),
            (Stance::Only(names), _) => {
                let list = names
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                if strict {
                    b.rule(
                        &format!("exec allow [{list}]"),
                        true,
                        Enforcement::Widened {
                            to: "the listed programs, plus executables inside library directories (/usr/lib*, /lib*) when started through the dynamic loader".into(),
                        },
                        &[
                            "landlock-execute",
                            "noexec mounts",
                            "seccomp (memfd_create answered ENOSYS)",
                        ],
                    );
                } else {
                    b.rule(
                        &format!("exec allow [{list}]"),
                        true,
                        Enforcement::NotEnforced {
                            reason: "without a mount namespace any readable program can be started through the dynamic loader (`ld.so PROGRAM`); use the strict profile or exec = \"deny\"".into(),
                        },
                        &["landlock-execute"],
                    );
                }
            }
        }

        // Environment.
        let env = Plan::env_patterns(policy);
        match policy.env_stance() {
            Stance::Anything => {
                b.rule("env (unspecified = inherit)", true, Enforcement::Exact, &[])
            }
            Stance::Nothing => b.rule(
                "env deny",
                true,
                Enforcement::Exact,
                &["cleared environment"],
            ),
            Stance::Only(_) => b.rule(
                &format!(
                    "env allow [{}]",
                    env.as_deref().unwrap_or_default().join(", ")
                ),
                true,
                Enforcement::Exact,
                &["cleared environment"],
            ),
        }

        // Limits.
        let l = &policy.limits;
        if let Some(v) = l.timeout_ms {
            b.rule(
                &format!("limits.timeout_ms {v}"),
                true,
                Enforcement::Exact,
                &[if strict {
                    "pid-ns teardown"
                } else {
                    "child-subreaper tree kill"
                }],
            );
        }
        let memory_limit = memory_rule(&mut b, l.memory_bytes, profile, host);
        for (name, value, rlimit) in [
            ("cpu_seconds", l.cpu_seconds, "RLIMIT_CPU"),
            ("max_open_files", l.max_open_files, "RLIMIT_NOFILE"),
        ] {
            if let Some(v) = value {
                let enforcement = match name {
                    "max_open_files" if v < MIN_OPEN_FILES => Enforcement::NotEnforced {
                        reason: format!("{v} is below {MIN_OPEN_FILES}, the least a program starts with: stdin, stdout and stderr take three descriptors, the dynamic loader needs one more to open the libraries, and the sandbox's set-up holds up to four of its own (status pipe, seccomp listener and the socket that hands it over) when the limit is already in force"),
                    },
                    _ => Enforcement::Widened {
                        to: format!("{rlimit} {v} for each process of the tree"),
                    },
                };
                b.rule(&format!("limits.{name} {v}"), true, enforcement, &[rlimit]);
            }
        }
        if let Some(v) = l.max_file_bytes {
            b.rule(
                &format!("limits.max_file_bytes {v}"),
                true,
                Enforcement::Exact,
                &["RLIMIT_FSIZE"],
            );
        }
        if let Some(v) = l.max_output_bytes {
            b.rule(
                &format!("limits.max_output_bytes {v}"),
                true,
                Enforcement::Exact,
                &["runner capture with truncation mark"],
            );
        }
        let process_limit = match l.max_processes {
            None => ProcessLimit::None,
            Some(v) => {
                let rule = format!("limits.max_processes {v}");
                if host.pids_cgroup.is_some() {
                    b.rule(&rule, true, Enforcement::Exact, &["pids cgroup"]);
                    ProcessLimit::Cgroup(v)
                } else if !host.host_root {
                    b.rule(
                        &rule,
                        true,
                        Enforcement::Widened {
                            to: format!("RLIMIT_NPROC {v}, which counts every process of the runner's user (uid {} here; not only this tree)", host.euid),
                        },
                        &["RLIMIT_NPROC"],
                    );
                    ProcessLimit::Rlimit(v)
                } else {
                    b.rule(
                        &rule,
                        true,
                        Enforcement::NotEnforced {
                            reason: "the runner's user is the host's root (uid 0 of the initial user namespace, whatever uid it has here), for whom RLIMIT_NPROC is not enforced, and no writable pids cgroup was found; mount the cgroup pids controller (v1 `pids` or v2 with `+pids` in /sys/fs/cgroup/cgroup.subtree_control) or run as a non-root user".into(),
                        },
                        &[],
                    );
                    ProcessLimit::None
                }
            }
        };

        // Protections the sandbox adds on its own.
        let ok = Enforcement::Exact;
        let no_ns = |what: &str| Enforcement::NotEnforced {
            reason: format!("{what} needs namespaces; the hardened profile has none"),
        };
        b.rule(
            "no new privileges",
            false,
            ok.clone(),
            &["PR_SET_NO_NEW_PRIVS"],
        );
        b.rule(
            "no capabilities",
            false,
            ok.clone(),
            &[if strict {
                "user-ns inner uid 1000"
            } else {
                "bounding set and securebits"
            }],
        );
        b.rule(
            "syscall filter (namespaces, mount, ptrace, bpf, io_uring, keyring, modules, kexec, x32; socket families other than unix/IP/netlink unless net = allow)",
            false,
            ok.clone(),
            &["seccomp"],
        );
        b.rule(
            "no set-user-ID, set-group-ID or file-capability files",
            false,
            ok.clone(),
            &[
                "seccomp mode filters (chmod family, open/openat/creat/mknod creating a file; openat2 answered ENOSYS)",
                "no CAP_FSETID or CAP_SETFCAP",
            ],
        );
        b.rule(
            "SysV IPC and POSIX message queues of host processes",
            false,
            ok.clone(),
            &[if strict {
                "ipc-ns"
            } else {
                "seccomp (SysV IPC and mq_* calls refused)"
            }],
        );
        b.rule(
            "resource limits of host processes",
            false,
            ok.clone(),
            &[if strict {
                "pid-ns"
            } else {
                "seccomp (prlimit64 on pid 0 only; sched_set*, setpriority and ioprio_set on the caller only)"
            }],
        );
        let scoped = if host.landlock_abi >= FULL_LANDLOCK_ABI {
            "landlock-scope"
        } else {
            "pid-ns and net-ns"
        };
        b.rule(
            "signals and abstract unix sockets stay inside",
            false,
            ok.clone(),
            &[scoped],
        );
        b.rule("core dumps off", false, ok.clone(), &["RLIMIT_CORE 0"]);
        b.rule(
            "dies with its parent",
            false,
            ok.clone(),
            &["PR_SET_PDEATHSIG"],
        );
        if strict {
            b.rule(
                "host processes invisible, tree dies together",
                false,
                ok.clone(),
                &["pid-ns"],
            );
            b.rule(
                "/run and host sockets hidden",
                false,
                ok.clone(),
                &["mount-ns"],
            );
            if net != NetPlan::Allow {
                let mut by = vec![
                    "seccomp user-notify connect: the supervisor connects only to sockets on the sandbox's own filesystems (private /tmp)",
                    "seccomp: unix datagram sockets refused",
                ];
                if host.landlock_abi >= LANDLOCK_ABI_RESOLVE_UNIX {
                    by.push("landlock resolve-unix");
                }
                b.rule(
                    "host pathname unix sockets inside the roots unreachable",
                    false,
                    ok.clone(),
                    &by,
                );
            } else {
                // net = allow sends no connect to the supervisor: a host service's socket that
                // lies inside a root is as reachable as the network is.
                b.rule(
                    "host pathname unix sockets inside the roots unreachable",
                    false,
                    Enforcement::NotEnforced {
                        reason: "net = allow: a host service's pathname unix socket inside a read or write root is reachable (connect, and datagrams by sendto); the mount namespace hides only the sockets outside the roots".into(),
                    },
                    &[],
                );
                // The tool shares the host's network namespace, and with it /proc/net.
                let (rule, _, reason) = HOST_NETWORK_STATE;
                b.rule(
                    rule,
                    false,
                    Enforcement::NotEnforced {
                        reason: format!("net = allow: {reason}"),
                    },
                    &[],
                );
            }
            b.rule(
                &format!(
                    "curated /dev with its own ptys (devpts), fresh /proc, private {} of at most {} bytes (tmpfs)",
                    if host_tmp { "/dev/shm" } else { "/tmp and /dev/shm" },
                    scratch_bytes(&policy.limits)
                ),
                false,
                ok,
                &["mount-ns"],
            );
        } else {
            for (rule, _, reason) in HARDENED_LEAVES_OPEN {
                b.rule(
                    rule,
                    false,
                    Enforcement::NotEnforced {
                        reason: reason.to_string(),
                    },
                    &[],
                );
            }
            // Without a mount namespace there is no private /dev/shm or devpts to give: the
            // host's stay closed, since opening them would reach other processes' shared
            // memory and terminals. POSIX shared memory, semaphores and ptys fail.
            b.rule(
                "host /dev/shm and ptys closed (no private ones without a mount namespace: POSIX shared memory, semaphores and ptys fail unless /dev/shm is declared)",
                false,
                ok.clone(),
                &["landlock"],
            );
            b.rule(
                "HOME and XDG directories outside the read roots point at the scratch directory",
                false,
                ok.clone(),
                &["environment"],
            );
            b.rule(
                "/run and host pathname sockets hidden",
                false,
                if matches!(net, NetPlan::Deny) {
                    Enforcement::Exact
                } else {
                    no_ns("hiding pathname unix sockets (Landlock ABI < 9)")
                },
                &["seccomp socket()"],
            );
        }
        let mut proc_open = vec![KEY_DESCRIPTIONS_LISTED];
        if host.host_root {
            proc_open.push(ROOT_TOOL_READS_ROOT_PROC);
        }
        for (rule, reason) in proc_open {
            b.rule(
                rule,
                false,
                Enforcement::NotEnforced {
                    reason: reason.into(),
                },
                &[],
            );
        }

        let landlock_abi = host.landlock_abi;
        let required = required_landlock_abi(profile, &net);
        if landlock_abi < required {
            b.rule(
                "landlock",
                false,
                Enforcement::NotEnforced {
                    reason: format!(
                        "the kernel offers Landlock ABI {landlock_abi}, the {profile} profile with this network policy needs at least {required} (ABI 4: Linux 6.7, ABI 6: Linux 6.12, with `landlock` in the `lsm=` boot parameter)"
                    ),
                },
                &[],
            );
        }
        if !host.seccomp {
            b.rule(
                "seccomp",
                false,
                Enforcement::NotEnforced {
                    reason: "the kernel has no seccomp filter support (CONFIG_SECCOMP_FILTER)"
                        .into(),
                },
                &[],
            );
        }
        if strict {
            if let Err(why) = &host.user_ns {
                b.rule(
                    "user namespaces",
                    false,
                    Enforcement::NotEnforced {
                        reason: format!(
                            "{why}; enable user namespaces or ask for `--profile hardened`"
                        ),
                    },
                    &[],
                );
            }
        }

        let metadata_writes_open =
            metadata_reaches_host(profile, &b.roots, host.owns_system_files());
        let protected = protected_rules(
            &b.roots,
            &policy_runtime::protected::process_list(),
            profile,
        );
        Plan {
            profile,
            roots: b.roots,
            scratch: if strict {
                !host_tmp
            } else {
                policy.fs.write.is_none()
            },
            host_tmp,
            scratch_bytes: scratch_bytes(&policy.limits),
            exec,
            net,
            env,
            limits: policy.limits.clone(),
            process_limit,
            memory_limit,
            landlock_abi,
            metadata_writes_open,
            rules: b.rules,
            protected,
        }
    }

    /// The environment variable patterns a policy keeps (`None`: the whole environment).
    pub fn env_patterns(policy: &ToolPolicy) -> Option<Vec<String>> {
        match policy.env_stance() {
            Stance::Anything => None,
            Stance::Nothing => Some(Vec::new()),
            Stance::Only(patterns) => {
                Some(patterns.iter().map(|p| p.as_str().to_string()).collect())
            }
        }
    }

    /// Why the plan cannot run: every declared rule that is not enforced, and every missing
    /// mechanism the profile depends on. `None` when it can.
    pub fn refusal(&self) -> Option<String> {
        let missing: Vec<String> = self
            .rules
            .iter()
            .filter_map(|r| match &r.enforcement {
                Enforcement::NotEnforced { reason }
                    if r.declared
                        || matches!(
                            r.rule.as_str(),
                            "landlock" | "seccomp" | "user namespaces"
                        ) =>
                {
                    Some(format!("{}: {}", r.rule, reason))
                }
                _ => None,
            })
            .collect();
        if missing.is_empty() {
            None
        } else {
            Some(format!(
                "{} profile cannot enforce {}",
                self.profile,
                missing.join("; ")
            ))
        }
    }

    /// The report as JSON, for audit events.
    pub fn report_json(&self) -> serde_json::Value {
        serde_json::json!({
            "profile": self.profile,
            "landlock_abi": self.landlock_abi,
            "rules": self.rules,
            "protected": self.protected,
        })
    }
}

/// The Landlock ABI whose `LANDLOCK_ACCESS_FS_RESOLVE_UNIX` governs pathname-socket connects.
pub const LANDLOCK_ABI_RESOLVE_UNIX: i32 = 9;

/// Whether the tool can change the mode, owner group, timestamps and extended attributes of
/// host files outside its roots: in the hardened profile with declared write roots, where
/// the seccomp filter lets `chmod`, `chown`, `utimes` and `setxattr` through for the write
/// roots' sake and Landlock (up to ABI 7) does not govern them. Without declared write roots
/// the filter refuses them all ([`crate::seccomp::METADATA_WRITES`]), and so it does for a root
/// runner whatever the roots: the files a root runner's uid owns are the system's own
/// (`chmod 666 /etc/shadow` needs no capability from their owner), so the tool must not change
/// any file's metadata, not even in its write roots. In the strict profile paths outside the
/// roots do not exist.
fn metadata_reaches_host(profile: Profile, roots: &[FsRoot], root_runner: bool) -> bool {
    profile == Profile::Hardened && !root_runner && roots.iter().any(|r| r.write && r.declared)
}

impl Plan {
    /// See `metadata_reaches_host`: `true` when the hardened filter must leave the metadata
    /// writes open, which the report then discloses on every `fs.write` rule.
    pub fn host_metadata_writable(&self) -> bool {
        self.metadata_writes_open
    }
}

/// The hardened profile's `fs` rows, made true: Landlock does not govern `stat`, `access` or
/// inotify, and, with write roots, the metadata writes of [`metadata_reaches_host`].
/// `root_runner`: the runner's uid owns a system's files ([`HostSupport::owns_system_files`]),
/// so the filter refuses every metadata write and the `fs.write` rows say why.
fn disclose_ungoverned_metadata(rules: &mut [RuleReport], roots: &[FsRoot], root_runner: bool) {
    let metadata_writes = metadata_reaches_host(Profile::Hardened, roots, root_runner);
    let owned_by_runner = "plus, anywhere on the host, the mode, group, timestamps and extended attributes of the files the runner's uid owns: Landlock up to ABI 7 does not govern chmod, chown, utimes or setxattr, and seccomp refuses them only when no write root is declared or the runner is root (of the host or of its user namespace)";
    let refused = if root_runner {
        "seccomp (chmod, chown, utimes, xattr writes refused: the runner is root, of the host or of its user namespace, so they would reach the system's own files)"
    } else {
        "seccomp (chmod, chown, utimes, xattr writes refused)"
    };
    for r in rules.iter_mut().filter(|r| r.rule.starts_with("fs.")) {
        let read = r.rule.starts_with("fs.read");
        let extra = if read {
            "plus the metadata (stat, access), symlink targets (readlink), extended attributes (getxattr, listxattr) and change notifications (inotify, fanotify) of every host path: Landlock up to ABI 7 does not govern them and the hardened profile has no mount namespace to hide paths"
        } else if metadata_writes {
            owned_by_runner
        } else {
            r.by.push(refused.into());
            continue;
        };
        let base = match &r.enforcement {
            Enforcement::Exact => r.rule.split_once(' ').map_or("", |(_, g)| g).to_string(),
            Enforcement::Widened { to } => to.clone(),
            Enforcement::NotEnforced { .. } => continue,
        };
        r.enforcement = Enforcement::Widened {
            to: format!("{base}; {extra}"),
        };
    }
}

struct Builder {
    rules: Vec<RuleReport>,
    roots: Vec<FsRoot>,
}

impl Builder {
    fn rule(&mut self, rule: &str, declared: bool, enforcement: Enforcement, by: &[&str]) {
        self.rules.push(RuleReport {
            rule: rule.to_string(),
            declared,
            enforcement,
            by: by.iter().map(|s| s.to_string()).collect(),
        });
    }
}

/// The path the OS sandbox grants for a glob, and whether that is exact: the one decision of
/// [`OsGrant::of`], with the filesystem asked whether a literal glob names an existing file
/// now, when the tool starts.
///
/// * `prefix/**` with a literal prefix: that tree, exactly.
/// * A fully literal glob naming an existing non-directory: that file, exactly.
/// * Anything else: the longest literal directory prefix as a tree (widened).
pub fn enforce_glob(glob: &Glob) -> (PathBuf, Enforcement) {
    let grant = OsGrant::of(glob, |path| {
        Some(std::fs::metadata(path).is_ok_and(|m| !m.is_dir()))
    });
    let to = grant.wider_tree();
    match grant {
        OsGrant::Tree(path) | OsGrant::File(path) => (path, Enforcement::Exact),
        // `FileIfExists` only comes from a probe that cannot answer; this one always does.
        // Were it to appear, the wider tree is what a root at `otherwise` grants.
        OsGrant::Widened { root }
        | OsGrant::FileIfExists {
            otherwise: root, ..
        } => (
            root,
            Enforcement::Widened {
                // Always `Some` for these two; the widest tree if it were not.
                to: to.unwrap_or_else(|| "/**".to_string()),
            },
        ),
    }
}

/// [`resolve_program`] for a name of an exec allow-list: a bare name's `PATH` search skips the
/// directories inside a write root, where the tool could have left a program, or a symlink to
/// `/bin/sh`, under a listed name in an earlier run (the listed name would then admit it).
fn resolve_listed(program: &Path, writable: &[PathBuf]) -> Option<PathBuf> {
    if program.components().count() > 1 || program.is_absolute() {
        return resolve_program(program, None);
    }
    let path_var =
        std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let kept = std::env::split_paths(&path_var).filter(|dir| {
        let dir = crate::canonical::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        !writable.iter().any(|w| dir.starts_with(w))
    });
    let kept = std::env::join_paths(kept).ok()?;
    resolve_program(program, Some(&kept))
}

/// Resolves a program as `execve` would after a `PATH` search: absolute paths as they are,
/// bare names against `path_var` (or this process's `PATH`). Returns `None` when not found.
pub fn resolve_program(program: &Path, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_exec = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.components().count() > 1 || program.is_absolute() {
        let p = if program.is_absolute() {
            program.to_path_buf()
        } else {
            std::env::current_dir().ok()?.join(program)
        };
        return is_exec(&p).then_some(p);
    }
    let path_var = match path_var {
        Some(p) => p.to_os_string(),
        None => std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
    };
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|p| p.is_absolute() && is_exec(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(json: &str, profile: Profile) -> Plan {
        let policy = ToolPolicy::from_json_str("t", json).unwrap();
        Plan::new(&policy, profile, &HostSupport::assume_full())
    }

    fn status<'a>(plan: &'a Plan, rule: &str) -> &'a Enforcement {
        &plan
            .rules
            .iter()
            .find(|r| r.rule == rule)
            .unwrap_or_else(|| panic!("no rule `{rule}` in {:#?}", plan.rules))
            .enforcement
    }

    #[test]
    fn trees_are_exact_other_globs_widen_to_their_directory() {
        let p = plan(
            r#"{"fs": {"read": ["/src/**", "/data/*.csv", "/a/**/b", "/x/{y,z}/**"], "write": ["/out/**"]}}"#,
            Profile::Strict,
        );
        assert_eq!(status(&p, "fs.read /src/**"), &Enforcement::Exact);
        assert_eq!(status(&p, "fs.write /out/**"), &Enforcement::Exact);
        assert_eq!(
            status(&p, "fs.read /data/*.csv"),
            &Enforcement::Widened {
                to: "/data/**".into()
            }
        );
        assert_eq!(
            status(&p, "fs.read /a/**/b"),
            &Enforcement::Widened { to: "/a/**".into() }
        );
        assert_eq!(
            status(&p, "fs.read /x/{y,z}/**"),
            &Enforcement::Widened { to: "/x/**".into() }
        );
        assert!(p.roots.contains(&FsRoot {
            path: "/out".into(),
            write: true,
            declared: true,
        }));
        assert!(p.roots.contains(&FsRoot {
            path: "/data".into(),
            write: false,
            declared: true,
        }));
        assert!(p.refusal().is_none());
    }

    #[test]
    fn literal_existing_file_is_exact_missing_one_widens() {
        let dir = std::env::temp_dir().join(format!("plan-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f.txt");
        std::fs::write(&file, "x").unwrap();
        let json = format!(
            r#"{{"fs": {{"read": ["{}", "{}/missing.txt"]}}}}"#,
            file.display(),
            dir.display()
        );
        let p = plan(&json, Profile::Strict);
        assert_eq!(
            status(&p, &format!("fs.read {}", file.display())),
            &Enforcement::Exact
        );
        assert_eq!(
            status(&p, &format!("fs.read {}/missing.txt", dir.display())),
            &Enforcement::Widened {
                to: format!("{}/**", dir.display())
            }
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn root_wildcard_widens_to_everything() {
        let p = plan(r#"{"fs": {"read": ["/*.txt"]}}"#, Profile::Strict);
        assert_eq!(
            status(&p, "fs.read /*.txt"),
            &Enforcement::Widened { to: "/**".into() }
        );
    }

    #[test]
    fn unspecified_parts_take_the_sandbox_defaults() {
        let p = plan("{}", Profile::Strict);
        assert_eq!(p.net, NetPlan::Deny);
        assert_eq!(p.exec, ExecPlan::Allow);
        assert_eq!(p.env, None);
        assert!(p.scratch);
        assert_eq!(status(&p, "net (unspecified = deny)"), &Enforcement::Exact);
        assert!(p.roots.iter().all(|r| !r.write));
        assert!(p.roots.iter().all(|r| !r.path.starts_with("/root")
            && !r.path.starts_with("/home")
            && !r.path.starts_with("/run")));
    }

    /// An empty list means nothing, as the policy's stances say: `net = none` and
    /// `exec = none` are enforced as deny (a hardened runner used to refuse them as host and
    /// program lists it cannot enforce), `env = none` as an empty environment.
    #[test]
    fn empty_lists_are_planned_as_deny() {
        let p = plan(
            r#"{"net": {"hosts": []}, "exec": {"allow": []}, "env": {"allow": []}}"#,
            Profile::Hardened,
        );
        assert_eq!(p.net, NetPlan::Deny);
        assert_eq!(p.exec, ExecPlan::Deny);
        assert_eq!(p.env, Some(Vec::new()));
        assert!(p.refusal().is_none(), "{:?}", p.refusal());
        assert_eq!(status(&p, "net deny"), &Enforcement::Exact);
        assert_eq!(status(&p, "env deny"), &Enforcement::Exact);
    }

    #[test]
    fn hardened_refuses_host_lists_and_exec_lists() {
        let p = plan(
            r#"{"net": {"hosts": ["example.com:443"]}}"#,
            Profile::Hardened,
        );
        let why = p.refusal().expect("hosts need strict");
        assert!(why.contains("net hosts") && why.contains("strict"), "{why}");
        let p = plan(r#"{"exec": {"allow": ["sh"]}}"#, Profile::Hardened);
        assert!(p.refusal().unwrap().contains("dynamic loader"));
        let p = plan(r#"{"exec": "deny", "net": "deny"}"#, Profile::Hardened);
        assert!(p.refusal().is_none(), "{:?}", p.refusal());
        assert!(matches!(
            status(&p, "host processes invisible"),
            Enforcement::NotEnforced { reason } if reason.contains("/proc/PID/cmdline")
        ));
        assert!(matches!(
            status(&p, "host network state hidden"),
            Enforcement::NotEnforced { reason } if reason.contains("/proc/net")
        ));
    }

    #[test]
    fn hardened_never_reports_a_filesystem_rule_exact_while_metadata_stays_open() {
        // An unprivileged runner with a write root: the metadata writes stay open (a root
        // runner's filter refuses them, see hardened_reports_the_metadata_landlock_does_not_govern).
        let policy = ToolPolicy::from_json_str(
            "t",
            r#"{"fs": {"read": ["/src/**"], "write": ["/out/**"]}}"#,
        )
        .unwrap();
        let mut host = HostSupport::assume_full();
        host.euid = 1000;
        host.host_root = false;
        let p = Plan::new(&policy, Profile::Hardened, &host);
        for (rule, names) in [("fs.read /src/**", "stat"), ("fs.write /out/**", "chmod")] {
            assert!(
                matches!(status(&p, rule), Enforcement::Widened { to } if to.contains(names)),
                "{rule}: {:?}",
                status(&p, rule)
            );
        }
        for (rule, _, _) in HARDENED_LEAVES_OPEN {
            assert!(matches!(status(&p, rule), Enforcement::NotEnforced { .. }));
        }
        assert!(p.refusal().is_none(), "disclosures do not refuse the run");
        let strict = plan(r#"{"fs": {"read": ["/src/**"]}}"#, Profile::Strict);
        assert_eq!(status(&strict, "fs.read /src/**"), &Enforcement::Exact);
        assert_eq!(
            status(
                &strict,
                "host pathname unix sockets inside the roots unreachable"
            ),
            &Enforcement::Exact
        );
    }

    #[test]
    fn strict_reports_exec_list_as_widened() {
        let p = plan(r#"{"exec": {"allow": ["sh"]}}"#, Profile::Strict);
        assert!(matches!(
            status(&p, "exec allow [sh]"),
            Enforcement::Widened { .. }
        ));
        match &p.exec {
            ExecPlan::Programs(progs) => assert!(progs.iter().any(|p| p.ends_with("sh"))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_host_features_refuse() {
        let policy = ToolPolicy::from_json_str("t", "{}").unwrap();
        let mut host = HostSupport::assume_full();
        host.landlock_abi = 3;
        let why = Plan::new(&policy, Profile::Strict, &host)
            .refusal()
            .unwrap();
        assert!(why.contains("Landlock ABI 3"), "{why}");
        let mut host = HostSupport::assume_full();
        host.user_ns = Err("user namespaces are disabled".into());
        let why = Plan::new(&policy, Profile::Strict, &host)
            .refusal()
            .unwrap();
        assert!(why.contains("--profile hardened"), "{why}");
        assert!(Plan::new(&policy, Profile::Hardened, &host)
            .refusal()
            .is_none());
    }

    #[test]
    fn landlock_abi_4_is_enough_for_strict_with_a_network_namespace() {
        let mut host = HostSupport::assume_full();
        host.landlock_abi = 4;
        for (json, profile, runs) in [
            (r#"{"net": "deny"}"#, Profile::Strict, true),
            (
                r#"{"net": {"hosts": ["a.example.com:443"]}}"#,
                Profile::Strict,
                true,
            ),
            (r#"{"net": "allow"}"#, Profile::Strict, false),
            (r#"{"net": "deny"}"#, Profile::Hardened, false),
        ] {
            let policy = ToolPolicy::from_json_str("t", json).unwrap();
            let refusal = Plan::new(&policy, profile, &host).refusal();
            assert_eq!(refusal.is_none(), runs, "{json} {profile}: {refusal:?}");
            if let Some(why) = refusal {
                assert!(why.contains("needs at least 6"), "{why}");
            }
        }
    }

    #[test]
    fn process_limit_for_root_needs_a_cgroup() {
        let policy = ToolPolicy::from_json_str("t", r#"{"limits": {"max_processes": 8}}"#).unwrap();
        let mut host = HostSupport::assume_full();
        host.pids_cgroup = None;
        host.euid = 0;
        let p = Plan::new(&policy, Profile::Strict, &host);
        assert!(p
            .refusal()
            .unwrap()
            .contains("RLIMIT_NPROC is not enforced"));
        // The host's root with another uid in a user namespace of its own: still refused.
        host.euid = 1000;
        let p = Plan::new(&policy, Profile::Strict, &host);
        assert!(p
            .refusal()
            .unwrap()
            .contains("RLIMIT_NPROC is not enforced"));
        host.host_root = false;
        let p = Plan::new(&policy, Profile::Strict, &host);
        assert_eq!(p.process_limit, ProcessLimit::Rlimit(8));
        assert!(matches!(
            status(&p, "limits.max_processes 8"),
            Enforcement::Widened { .. }
        ));
        let p = Plan::new(&policy, Profile::Strict, &HostSupport::assume_full());
        assert_eq!(p.process_limit, ProcessLimit::Cgroup(8));
    }

    #[test]
    fn memory_limit_is_exact_only_with_a_memory_cgroup_and_refused_below_the_floor() {
        let json = format!(r#"{{"limits": {{"memory_bytes": {}}}}}"#, 64u64 << 20);
        let policy = ToolPolicy::from_json_str("t", &json).unwrap();
        let rule = format!("limits.memory_bytes {}", 64u64 << 20);
        let mut host = HostSupport::assume_full();
        host.memory_cgroup = Some(crate::hostcaps::CgroupParent {
            parent: "/nonexistent-cgroup-v2".into(),
            v2: true,
        });
        let p = Plan::new(&policy, Profile::Strict, &host);
        assert_eq!(status(&p, &rule), &Enforcement::Exact);
        assert_eq!(p.memory_limit, MemoryLimit::Cgroup(64 << 20));
        assert_eq!(p.scratch_bytes, 64 << 20);
        host.memory_cgroup = None;
        for profile in [Profile::Strict, Profile::Hardened] {
            let p = Plan::new(&policy, profile, &host);
            match status(&p, &rule) {
                Enforcement::Widened { to } => assert!(to.contains("memfd"), "{to}"),
                other => panic!("{other:?}"),
            }
            assert_eq!(p.memory_limit, MemoryLimit::Rlimit(64 << 20));
            assert!(p.refusal().is_none());
        }
        let tiny = ToolPolicy::from_json_str(
            "t",
            r#"{"limits": {"memory_bytes": 10, "max_open_files": 3}}"#,
        )
        .unwrap();
        let why = Plan::new(&tiny, Profile::Strict, &host).refusal().unwrap();
        assert!(
            why.contains("limits.memory_bytes 10: 10 bytes is below"),
            "{why}"
        );
        assert!(
            why.contains("limits.max_open_files 3: 3 is below 8"),
            "{why}"
        );
        assert_eq!(
            plan("{}", Profile::Strict).scratch_bytes,
            DEFAULT_SCRATCH_BYTES
        );
    }

    #[test]
    fn a_declared_root_holding_tmp_shows_the_host_tmp() {
        let p = plan(r#"{"fs": {"write": ["/tmp/**"]}}"#, Profile::Strict);
        assert!(p.host_tmp && !p.scratch);
        assert_eq!(status(&p, "fs.write /tmp/**"), &Enforcement::Exact);
        let p = plan(r#"{"fs": {"read": ["/tmp/**"]}}"#, Profile::Strict);
        assert!(p.host_tmp);
        assert!(p.rules.iter().any(|r| r.rule.contains("no private /tmp;")));
        let p = plan(r#"{"fs": {"write": ["/tmp/work/**"]}}"#, Profile::Strict);
        assert!(!p.host_tmp && p.scratch);
        for glob in [
            "/**",
            "/proc/**",
            "/dev/shm/**",
            "/dev/**",
            "/{dev,etc}/**",
            "/d*",
        ] {
            let json = format!(r#"{{"fs": {{"write": ["{glob}"]}}}}"#);
            let why = plan(&json, Profile::Strict)
                .refusal()
                .unwrap_or_else(|| panic!("{glob} runs"));
            assert!(why.contains("shows its own"), "{why}");
            assert!(plan(&json, Profile::Hardened).refusal().is_none());
        }
        // A widened glob that names nothing of /proc or /dev still runs.
        assert!(plan(r#"{"fs": {"read": ["/*.txt"]}}"#, Profile::Strict)
            .refusal()
            .is_none());
    }

    #[test]
    fn profiles_parse_by_name_and_strict_is_the_default() {
        assert_eq!("strict".parse::<Profile>(), Ok(Profile::Strict));
        assert_eq!("hardened".parse::<Profile>(), Ok(Profile::Hardened));
        assert!("none".parse::<Profile>().unwrap_err().contains("strict"));
        assert_eq!(crate::runner::RunOptions::default().profile, None);
        assert!(!crate::runner::RunOptions::default().unconfined);
        // The same policy is planned differently per profile.
        let strict = plan("{}", Profile::Strict);
        let hardened = plan("{}", Profile::Hardened);
        assert!(strict
            .rules
            .iter()
            .any(|r| r.by.iter().any(|b| b == "pid-ns")));
        assert!(!hardened
            .rules
            .iter()
            .any(|r| r.by.iter().any(|b| b.contains("-ns"))));
    }

    #[test]
    fn hardened_reports_the_metadata_landlock_does_not_govern() {
        let json = r#"{"fs": {"read": ["/data/**"], "write": ["/out/**"]}}"#;
        let policy = ToolPolicy::from_json_str("t", json).unwrap();
        // A root runner's tool may change no metadata at all: its uid owns the system's files.
        let root = Plan::new(&policy, Profile::Hardened, &HostSupport::assume_full());
        assert!(!root.host_metadata_writable());
        assert_eq!(status(&root, "fs.write /out/**"), &Enforcement::Exact);
        let mut host = HostSupport::assume_full();
        host.euid = 1000;
        host.host_root = false;
        let p = Plan::new(&policy, Profile::Hardened, &host);
        assert!(p.host_metadata_writable());
        match status(&p, "fs.write /out/**") {
            Enforcement::Widened { to } => {
                assert!(to.starts_with("/out/**; ") && to.contains("chmod"), "{to}")
            }
            other => panic!("{other:?}"),
        }
        match status(&p, "fs.read /data/**") {
            Enforcement::Widened { to } => assert!(to.contains("stat"), "{to}"),
            other => panic!("{other:?}"),
        }
        // Without write roots the filter refuses the metadata writes: fs.write is exact.
        let p = plan(r#"{"fs": {"read": ["/data/**"]}}"#, Profile::Hardened);
        assert!(!p.host_metadata_writable());
        assert_eq!(
            status(
                &p,
                "fs.write (unspecified): private scratch directory only ($TMPDIR)"
            ),
            &Enforcement::Exact
        );
        assert!(p
            .rules
            .iter()
            .any(|r| r.rule.starts_with("fs.write")
                && r.by.iter().any(|b| b.contains("chmod, chown"))));
        // Strict hides every other path: nothing to disclose.
        let p = plan(json, Profile::Strict);
        assert!(!p.host_metadata_writable());
        assert_eq!(status(&p, "fs.write /out/**"), &Enforcement::Exact);
        assert_eq!(status(&p, "fs.read /data/**"), &Enforcement::Exact);
    }

    #[test]
    fn the_report_names_the_seccomp_mechanisms() {
        let by = |p: &Plan, rule: &str| {
            p.rules
                .iter()
                .find(|r| r.rule == rule)
                .unwrap_or_else(|| panic!("no rule `{rule}`"))
                .by
                .join(", ")
        };
        let p = plan(r#"{"exec": {"allow": ["sh"]}}"#, Profile::Strict);
        assert!(by(&p, "exec allow [sh]").contains("memfd_create"));
        for (profile, sysv, rlimits) in [
            (Profile::Strict, "ipc-ns", "pid-ns"),
            (
                Profile::Hardened,
                "SysV IPC and mq_* calls refused",
                "prlimit64 on pid 0 only",
            ),
        ] {
            let p = plan("{}", profile);
            assert!(by(&p, "SysV IPC and POSIX message queues of host processes").contains(sysv));
            assert!(by(&p, "resource limits of host processes").contains(rlimits));
            assert!(
                by(&p, "no set-user-ID, set-group-ID or file-capability files").contains("chmod")
            );
        }
    }

    #[test]
    fn report_serializes_with_status_tags() {
        let p = plan(r#"{"fs": {"read": ["/data/*.csv"]}}"#, Profile::Strict);
        let json = p.report_json();
        let rules = json["rules"].as_array().unwrap();
        let r = rules
            .iter()
            .find(|r| r["rule"] == "fs.read /data/*.csv")
            .unwrap();
        assert_eq!(r["status"], "widened");
        assert_eq!(r["to"], "/data/**");
        assert_eq!(json["profile"], "strict");
    }
}
