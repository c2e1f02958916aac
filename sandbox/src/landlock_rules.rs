//! The Landlock ruleset: every right of the negotiated ABI is handled (filesystem, TCP bind and
//! connect, abstract-socket and signal scopes), with `HardRequirement`, so a kernel that cannot
//! enforce a right makes the run fail instead of silently running with less.
//!
//! The rules are described in the parent ([`LandlockSpec`], cached per plan) and built in the
//! sandboxed child after its mounts exist, because the private `/tmp`, `/proc` and `/dev` are
//! new inodes that only the child can name. In the strict child, the rule of a path a bind put
//! in the view is made from that bind's descriptor ([`crate::mounts::BoundSources`]): the same
//! inode that opening the path would give, opened once per run instead of twice. A strict
//! ruleset built once per policy is not possible this way: the private inodes are new in every
//! run, and rules added to a shared ruleset would pile up in it. The strict rule list is made
//! shorter instead, once per policy (`rule_cover.rs`): covered rules dropped, roots alone
//! under a directory of the view's own folded into one rule there.
//!
//! The hardened profile has no private inodes but its scratch directory, so its rulesets are
//! built once per policy and scratch directory in the agent (`build_fd`, the `slots` module),
//! revalidated before every run (the `fingerprint` module) and enforced by the command's process
//! from the descriptor (`restrict_self_with`).

use std::os::fd::{BorrowedFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use serde::{Deserialize, Serialize};

use crate::fingerprint::Fingerprint;

/// One path rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathRule {
    /// The path (inside the sandbox's view).
    pub path: PathBuf,
    /// Read files and list directories.
    pub read: bool,
    /// Create, write, remove, rename.
    pub write: bool,
    /// Execute files.
    pub exec: bool,
    /// Skip the rule when the path does not exist (declared roots); otherwise a missing path
    /// is an error (the tool binary, devices).
    pub optional: bool,
}

/// Everything the child needs to build the ruleset.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockSpec {
    /// The negotiated ABI (kernel's, capped at what the crate knows).
    pub abi: i32,
    /// Path rules.
    pub paths: Vec<PathRule>,
    /// Restrict TCP connect; `false` only for net = allow.
    pub restrict_connect: bool,
    /// Ports that may be connected to.
    pub connect_ports: Vec<u16>,
    /// Ports that may be bound (TCP bind is always restricted).
    pub bind_ports: Vec<u16>,
    /// With Landlock ABI 9 or later: connecting to pathname unix sockets is allowed only
    /// beneath these paths (`None`: wherever writing is). The supervisor checks every
    /// `connect` on any ABI (`crate::supervisor`); this is the kernel's own second check.
    #[serde(default)]
    pub unix_connect_beneath: Option<Vec<PathBuf>>,
}

/// The rights `rule` grants on a directory (`is_dir`) or a file, in a ruleset of `abi`.
pub(crate) fn access_for(
    rule: &PathRule,
    abi: ABI,
    is_dir: bool,
    unix_connect_beneath: Option<&[PathBuf]>,
) -> BitFlags<AccessFs> {
    let mut access = BitFlags::<AccessFs>::empty();
    if rule.read {
        access |= AccessFs::ReadFile | AccessFs::ReadDir;
    }
    if rule.write {
        access |= AccessFs::from_all(abi) & !AccessFs::Execute;
    }
    if rule.exec {
        access |= AccessFs::Execute;
    }
    access &= AccessFs::from_all(abi);
    if unix_connect_beneath.is_some_and(|list| !list.contains(&rule.path)) {
        access &= !AccessFs::ResolveUnix;
    }
    if !is_dir {
        access &= AccessFs::from_file(abi);
    }
    access
}

/// Builds and enforces the ruleset on the calling thread. NO_NEW_PRIVS must already be set.
pub fn restrict_self(spec: &LandlockSpec) -> Result<(), String> {
    prepare(spec)?.enforce()
}

/// What the strict child's view holds open, by path: the descriptor shown there and whether it
/// is a directory ([`crate::mounts::BoundSources::get`], and a leased view's per-run
/// directories).
pub(crate) type Opened<'a> = &'a dyn Fn(&Path) -> Option<(BorrowedFd<'a>, bool)>;

/// [`restrict_self`] in the strict child, whose view's binds are already open
/// ([`crate::mounts::BoundSources`]): a rule for a path `opened` holds is made from that
/// descriptor.
pub(crate) fn restrict_self_bound(spec: &LandlockSpec, opened: Opened<'_>) -> Result<(), String> {
    prepare_bound(spec, Some(opened), &mut |_, _| {})?.enforce()
}

/// A ruleset with every rule added, not yet enforced: building it opens every path and asks the
/// kernel for every right, so what can fail has failed before anything is applied.
pub struct PreparedRuleset(landlock::RulesetCreated);

impl PreparedRuleset {
    /// Enforces the ruleset on the calling thread (and so on the threads and processes it
    /// starts later). NO_NEW_PRIVS must already be set, or the caller hold `CAP_SYS_ADMIN`.
    pub fn enforce(self) -> Result<(), String> {
        let status = self
            .0
            .restrict_self()
            .map_err(|e| format!("landlock restrict_self: {e}"))?;
        if status.ruleset != RulesetStatus::FullyEnforced {
            return Err(format!(
                "landlock ruleset not fully enforced ({:?})",
                status.ruleset
            ));
        }
        Ok(())
    }
}

/// Builds the ruleset of `spec` without enforcing it ([`PreparedRuleset::enforce`]).
pub fn prepare(spec: &LandlockSpec) -> Result<PreparedRuleset, String> {
    prepare_bound(spec, None, &mut |_, _| {})
}

/// Builds the ruleset of `spec` as a descriptor that any number of processes can later enforce
/// on themselves ([`restrict_self_with`]), and the [`Fingerprint`] of what its rule paths named:
/// a ruleset kept for later runs ([`crate::slots`]) is good only while that still holds.
/// Building needs no privilege, and enforces nothing on the caller.
pub(crate) fn build_fd(spec: &LandlockSpec) -> Result<(OwnedFd, Fingerprint), String> {
    let mut fingerprint = Fingerprint::begin(spec.paths.iter().map(|r| r.path.as_path()));
    let prepared = prepare_bound(spec, None, &mut |rule, meta| {
        fingerprint.rule(&rule.path, meta)
    })?;
    fingerprint.finish();
    let fd: Option<OwnedFd> = prepared.0.into();
    let fd = fd.ok_or_else(|| "landlock ruleset: the kernel gave no descriptor".to_string())?;
    Ok((fd, fingerprint))
}

/// [`build_fd`] for a ruleset used once: nothing is recorded for a later check.
pub(crate) fn build_fd_once(spec: &LandlockSpec) -> Result<OwnedFd, String> {
    let prepared = prepare_bound(spec, None, &mut |_, _| {})?;
    let fd: Option<OwnedFd> = prepared.0.into();
    fd.ok_or_else(|| "landlock ruleset: the kernel gave no descriptor".to_string())
}

/// Enforces the ruleset open as `ruleset` ([`build_fd`]) on the calling thread, in place of
/// building one: the rules, rights and compatibility were settled when it was built.
/// NO_NEW_PRIVS must already be set. Allocates nothing.
pub(crate) fn restrict_self_with(ruleset: RawFd) -> Result<(), String> {
    // SAFETY: landlock_restrict_self takes a descriptor number and flags; a descriptor that is
    // not a ruleset fails with EBADF or EBADFD.
    let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) };
    if rc != 0 {
        return Err(format!(
            "landlock restrict_self with the prepared ruleset (descriptor {ruleset}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// [`prepare`], taking the rule for a path that `opened` holds from its descriptor: the same
/// inode that opening the path in the view would give (the bind's root), one `openat2` and one
/// `statx` fewer per declared root. `seen` learns what each rule path opened as (`None`: not
/// opened, no rule).
fn prepare_bound(
    spec: &LandlockSpec,
    opened: Option<Opened<'_>>,
    seen: &mut dyn FnMut(&PathRule, Option<&std::fs::Metadata>),
) -> Result<PreparedRuleset, String> {
    let abi = ABI::from(spec.abi);
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("landlock {what}: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| fail("filesystem rights", &e))?;
    let net = if spec.restrict_connect {
        AccessNet::from_all(abi)
    } else {
        AccessNet::BindTcp.into()
    };
    // Rights this ABI does not have are not requested (HardRequirement would fail on them);
    // the plan refused already if the policy needs them.
    if !AccessNet::from_all(abi).is_empty() {
        ruleset = ruleset
            .handle_access(net)
            .map_err(|e| fail("network rights", &e))?;
    }
    if !Scope::from_all(abi).is_empty() {
        ruleset = ruleset
            .scope(Scope::from_all(abi))
            .map_err(|e| fail("scopes", &e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail("ruleset", &e))?;
    for rule in &spec.paths {
        if let Some((fd, is_dir)) = opened.and_then(|o| o(&rule.path)) {
            let access = access_for(rule, abi, is_dir, spec.unix_connect_beneath.as_deref());
            if !access.is_empty() {
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(|e| format!("landlock rule for {}: {e}", rule.path.display()))?;
            }
            continue;
        }
        // Never through a symlink: rule paths are canonical, so a link here was planted. The
        // kind is read from the opened descriptor, so it is the kind of what the rule names.
        let fd = match crate::mounts::open_no_symlinks(&rule.path) {
            Ok(fd) => fd,
            Err(_) if rule.optional => {
                seen(rule, None);
                continue;
            }
            Err(e) => return Err(format!("landlock rule for {}: {e}", rule.path.display())),
        };
        let meta = fd
            .metadata()
            .map_err(|e| format!("landlock rule for {}: {e}", rule.path.display()))?;
        seen(rule, Some(&meta));
        let access = access_for(
            rule,
            abi,
            meta.is_dir(),
            spec.unix_connect_beneath.as_deref(),
        );
        if access.is_empty() {
            continue;
        }
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| format!("landlock rule for {}: {e}", rule.path.display()))?;
    }
    let has_net = !AccessNet::from_all(abi).is_empty();
    if spec.restrict_connect && has_net {
        for &port in &spec.connect_ports {
            created = created
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(|e| fail("connect port rule", &e))?;
        }
    }
    for &port in spec.bind_ports.iter().filter(|_| has_net) {
        created = created
            .add_rule(NetPort::new(port, AccessNet::BindTcp))
            .map_err(|e| fail("bind port rule", &e))?;
    }
    Ok(PreparedRuleset(created))
}

/// The ABI the rules are built for: the kernel's, capped at the newest this crate knows.
pub fn negotiated_abi(kernel: i32) -> i32 {
    // ABI::from caps unknown newer versions at the crate's newest.
    ABI::from(kernel) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds and enforces `spec` in a forked child; the child's verdict.
    fn restrict_in_child(spec: &LandlockSpec) -> bool {
        // SAFETY: the child restricts itself and leaves with _exit.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                let ok = restrict_self(spec).is_ok();
                // Under the ruleset, /etc (not granted) must be unreadable.
                let denied = std::fs::read_dir("/etc").is_err();
                libc::_exit(if ok && denied { 0 } else { 1 });
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            libc::WEXITSTATUS(status) == 0
        }
    }

    #[test]
    fn older_abis_request_only_what_they_have() {
        let kernel = crate::hostcaps::landlock_abi();
        if kernel < FULL_ABI_FOR_TEST {
            crate::test_kernel::missing(&format!("Landlock ABI {kernel}"));
            return;
        }
        for abi in [1, 4, 6, negotiated_abi(kernel)] {
            let spec = LandlockSpec {
                abi,
                paths: vec![PathRule {
                    path: "/usr".into(),
                    read: true,
                    write: false,
                    exec: true,
                    optional: false,
                }],
                restrict_connect: true,
                connect_ports: vec![443],
                bind_ports: Vec::new(),
                unix_connect_beneath: Some(vec!["/tmp".into()]),
            };
            assert!(restrict_in_child(&spec), "ABI {abi}");
        }
    }

    const FULL_ABI_FOR_TEST: i32 = 6;
}
