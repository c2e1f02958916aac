//! `tool.escalation`: grants that amount to more than they say.
//!
//! * writing a program the tool may start (an absolute allow-list entry, or a bare name in one
//!   of the usual `PATH` directories) turns an exec allow-list into "run anything";
//! * writing a default protected path ([`policy_runtime::protected::default_patterns`], the list
//!   the gate and the sandbox protect): `.git/hooks` or `.git/config` (in any repository) runs
//!   code at the next git command, a shell rc file (in a home directory — `/root`, `/home/*`,
//!   `/Users/*`, `/var/home/*` — or the system-wide ones in `/etc`) at the next shell, and
//!   `~/.ssh` holds the user's keys and `authorized_keys`; writing `/proc/*/mem` rewrites a
//!   running process;
//! * reading `/proc/*/environ` reads other processes' secrets.
//!
//! Only declared globs count: an unspecified `fs` part is already reported as a widening of its
//! own, and "exec allow" already permits any program. A path escalation is reported when the
//! new policy reaches a target path that the old one (if the tool existed) did not: the
//! witness is such a path, so reaching one repository's `.git/hooks` does not excuse another's.
//! A program escalation is reported when the old policy did not reach the same program.

use std::sync::OnceLock;

use policy_runtime::glob::Glob;
use policy_runtime::policy::{Stance, ToolPolicy};
use policy_runtime::protected::{default_patterns, ProtectedKind};

use crate::findings::{Code, Finding};
use crate::fs::{GlobCache, PathSet};
use crate::inclusion::{find_witness, Budget, Language, Term, WitnessOrder};

/// Directories where a bare program name is usually found on `PATH`.
const PATH_DIRS: [&str; 6] = [
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// One escalation of one policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Escalation {
    /// What is reached, stable across versions of a policy (used to tell new from old).
    pub target: String,
    /// The manifest part that grants it: `fs.write` or `fs.read`.
    pub part: &'static str,
    /// A concrete path that shows it.
    pub witness: String,
    /// Why this is more than it says.
    pub why: &'static str,
}

struct Target {
    name: &'static str,
    write: bool,
    why: &'static str,
    regexes: Vec<String>,
    language: Language,
}

/// The targets, and for each access (write, read) the union of its targets' languages: one
/// search of the union settles the common case of a tool that reaches none.
struct Targets {
    each: Vec<Target>,
    any_write: Language,
    any_read: Language,
}

fn targets() -> &'static Targets {
    static TARGETS: OnceLock<Targets> = OnceLock::new();
    TARGETS.get_or_init(|| {
        let each = target_list();
        let union = |write: bool| {
            let res: Vec<&str> = each
                .iter()
                .filter(|t| t.write == write)
                .flat_map(|t| t.regexes.iter().map(String::as_str))
                .collect();
            Language::from_regexes(&res).expect("escalation targets compile")
        };
        Targets {
            any_write: union(true),
            any_read: union(false),
            each,
        }
    })
}

/// The system-wide shell start-up files, reported with the home ones.
const SYSTEM_RC: [&str; 2] = [
    r"^/etc/(?:profile|bash\.bashrc|bashrc|zshrc|zshenv|zprofile|zlogin|zsh/zshrc|zsh/zshenv|zsh/zprofile|zsh/zlogin|environment)$",
    r"^/etc/profile\.d/[^/]+$",
];

fn target_list() -> Vec<Target> {
    let t = |name, write, why, regexes: Vec<String>| Target {
        language: Language::from_regexes(&regexes).expect("escalation targets compile"),
        name,
        write,
        why,
        regexes,
    };
    let mut out = Vec::new();
    // The protected paths every runner protects by default, in the same terms.
    for (kind, regex) in default_patterns() {
        let (name, why): (&'static str, &'static str) = match kind {
            ProtectedKind::GitHooks => (
                "git hooks",
                "a file in .git/hooks runs as code at the next git command",
            ),
            ProtectedKind::GitConfig => (
                "git config",
                "a repository's .git/config names programs git runs (core.hooksPath, core.sshCommand, core.fsmonitor)",
            ),
            ProtectedKind::ShellRc => (
                "shell startup files",
                "a shell rc file runs as code at the next shell",
            ),
            ProtectedKind::Ssh => (
                "ssh directory",
                "~/.ssh holds the user's keys, authorized_keys and the ssh configuration (ProxyCommand runs code)",
            ),
            // The runner's own files have no default location.
            _ => continue,
        };
        let mut regexes = vec![regex];
        if kind == ProtectedKind::ShellRc {
            regexes.extend(SYSTEM_RC.iter().map(|r| r.to_string()));
        }
        out.push(t(name, true, why, regexes));
    }
    out.push(t(
        "process memory",
        true,
        "writing /proc/*/mem rewrites a running process",
        vec![r"^/proc/[^/]+/(?:task/[^/]+/)?mem$".to_string()],
    ));
    out.push(t(
        "process environments",
        false,
        "reading /proc/*/environ reads other processes' secrets",
        vec![r"^/proc/[^/]+/(?:task/[^/]+/)?environ$".to_string()],
    ));
    out
}

/// Which path targets an escalation search covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scope {
    /// Targets reached by writing (`.git/hooks`, rc files, `/proc/*/mem`).
    pub write: bool,
    /// Targets reached by reading (`/proc/*/environ`).
    pub read: bool,
}

impl Scope {
    /// Every target.
    pub const ALL: Scope = Scope {
        write: true,
        read: true,
    };
}

/// Every escalation of one policy, in a stable order.
///
/// `paths` says which path targets to search for (`write`, `read`); the program targets are
/// always checked.
///
/// A search that cannot finish within `budget` finds nothing: the widening it belongs to is
/// already reported as undecided.
pub fn escalations(
    cache: &mut GlobCache,
    policy: &ToolPolicy,
    paths: Scope,
    budget: &Budget,
) -> Vec<Escalation> {
    reached(cache, policy, paths, None, budget)
}

/// The escalations of `policy`; with `before`, only path targets that `policy` reaches at a
/// path `before` did not (so a grant on one repository's `.git/hooks` is new even when the old
/// policy reached another repository's).
fn reached(
    cache: &mut GlobCache,
    policy: &ToolPolicy,
    paths: Scope,
    before: Option<&ToolPolicy>,
    budget: &Budget,
) -> Vec<Escalation> {
    let mut out = Vec::new();
    let writable = declared(&[policy.fs.write.as_ref()]);
    let readable = declared(&[policy.fs.read.as_ref(), policy.fs.write.as_ref()]);

    if let (Some(PathSet::Globs(globs)), Stance::Only(programs)) = (&writable, policy.exec_stance())
    {
        for program in programs {
            let candidates: Vec<String> = if program.is_path() {
                vec![program.as_str().to_string()]
            } else {
                PATH_DIRS
                    .iter()
                    .map(|d| format!("{d}/{}", program.as_str()))
                    .collect()
            };
            if let Some(hit) = candidates
                .into_iter()
                .find(|c| globs.iter().any(|g| g.is_match(c)))
            {
                out.push(Escalation {
                    target: format!("program {program}"),
                    part: "fs.write",
                    witness: hit,
                    why: "the tool may replace a program it is allowed to start, and so run anything",
                });
            }
        }
    }

    let all = targets();
    for write in [true, false] {
        if !(if write { paths.write } else { paths.read }) {
            continue;
        }
        let (set, any, part) = if write {
            (&writable, &all.any_write, "fs.write")
        } else {
            (&readable, &all.any_read, "fs.read")
        };
        let Some(set) = set else { continue };
        if let PathSet::Globs(globs) = set {
            if !globs.iter().any(|g| may_reach(g, write)) {
                continue;
            }
        }
        let Some(lang) = cache.language(set) else {
            continue;
        };
        let Ok(lang) = lang.as_ref() else { continue };
        // What the old policy already reached for this access: everything when its fs was
        // unspecified; its declared lists otherwise. An old set too large to compile counts as
        // reaching nothing, so its escalations are reported again (fail closed).
        let old_compiled = match before {
            Some(old) if old.fs.is_unspecified() => continue,
            Some(old) => {
                let lists: &[Option<&policy_runtime::GlobList>] = if write {
                    &[old.fs.write.as_ref()]
                } else {
                    &[old.fs.read.as_ref(), old.fs.write.as_ref()]
                };
                let old_set = declared(lists).unwrap_or(PathSet::Globs(Vec::new()));
                cache.language(&old_set)
            }
            None => None,
        };
        let old_lang = old_compiled.as_deref().and_then(|l| l.as_ref().ok());
        let paths = Language::paths();
        let terms = [Term::member(paths), Term::member(any), Term::member(lang)];
        if !matches!(
            find_witness(&terms, WitnessOrder::Paths, budget),
            Ok(Some(_))
        ) {
            continue;
        }
        for target in all.each.iter().filter(|t| t.write == write) {
            let mut terms = vec![
                Term::member(paths),
                Term::member(&target.language),
                Term::member(lang),
            ];
            if let Some(old) = old_lang {
                terms.push(Term::non_member(old));
            }
            if let Ok(Some(witness)) = find_witness(&terms, WitnessOrder::Paths, budget) {
                out.push(Escalation {
                    target: target.name.to_string(),
                    part,
                    witness,
                    why: target.why,
                });
            }
        }
    }
    out
}

/// Whether `glob` might reach a path target of this access (`write`: the targets reached by
/// writing); `false` only when its components show it cannot, without building an automaton.
/// Every target lies in one of [`TARGET_TREES`] (for reads, in `/proc/**`), except a
/// repository's hooks and config, which are a run of components anywhere (`.git/hooks`,
/// `.git/config`): the test
/// `target_trees_hold_every_target` checks this against the targets' own languages.
fn may_reach(glob: &Glob, write: bool) -> bool {
    static TREES: OnceLock<Vec<Glob>> = OnceLock::new();
    let trees = TREES.get_or_init(|| {
        TARGET_TREES
            .iter()
            .map(|t| Glob::new(t).expect("target trees are valid globs"))
            .collect()
    });
    let trees = if write { &trees[..] } else { &trees[..1] };
    trees.iter().any(|t| glob.may_overlap(t))
        || (write
            && (glob.may_contain(&[".git", "hooks"]) || glob.may_contain(&[".git", "config"])))
}

/// Trees that hold the targets other than git hooks and config; the first holds every read
/// target.
const TARGET_TREES: [&str; 6] = [
    "/proc/**",
    "/root/**",
    "/home/**",
    "/Users/**",
    "/var/home/**",
    "/etc/**",
];

/// The union of the declared lists, or `None` when none is declared.
fn declared<'a>(lists: &[Option<&'a policy_runtime::GlobList>]) -> Option<PathSet<'a>> {
    let lists: Vec<_> = lists.iter().flatten().map(|l| Some(l.globs())).collect();
    (!lists.is_empty()).then(|| PathSet::union(lists))
}

/// `tool.escalation` findings for escalations of `new` that `old` (when given) did not have.
///
/// A path target can only be newly reached when the paths for that access widened, so the
/// caller passes in `paths` which accesses did (every access for a new tool); the others are
/// not searched at all, which keeps unchanged and narrowed tools cheap.
pub fn diff(
    cache: &mut GlobCache,
    tool: &str,
    old: Option<&ToolPolicy>,
    new: &ToolPolicy,
    paths: Scope,
    budget: &Budget,
) -> Vec<Finding> {
    let after = reached(cache, new, paths, old, budget);
    if after.is_empty() {
        return Vec::new();
    }
    // Path targets are already compared path by path; a program is new when its name is.
    let before: Vec<Escalation> = match old {
        Some(o) if after.iter().any(|e| e.target.starts_with("program ")) => reached(
            cache,
            o,
            Scope {
                write: false,
                read: false,
            },
            None,
            budget,
        ),
        _ => Vec::new(),
    };
    after
        .into_iter()
        .filter(|e| !before.iter().any(|b| b.target == e.target))
        .map(|e| {
            let list = if e.part == "fs.write" {
                new.fs.write.as_ref()
            } else {
                None
            };
            let new_text = list
                .map(|l| serde_json::to_string(l).expect("serializes"))
                .or_else(|| serde_json::to_string(&new.fs).ok());
            Finding {
                code: Code::Escalation,
                tool: tool.to_string(),
                path: format!("tools.{tool}.{}", e.part),
                message: format!(
                    "{} of `{tool}` reaches {} (`{}`): {}",
                    e.part, e.target, e.witness, e.why
                ),
                witness: Some(e.witness),
                old: None,
                new: new_text,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(json: &str) -> ToolPolicy {
        serde_json::from_str(json).unwrap()
    }

    fn targets_of(json: &str) -> Vec<(String, String)> {
        escalations(
            &mut GlobCache::default(),
            &policy(json),
            Scope::ALL,
            &Budget::per_tool(),
        )
        .into_iter()
        .map(|e| (e.target, e.witness))
        .collect()
    }

    fn new_escalations(old: &str, new: &str) -> Vec<String> {
        diff(
            &mut GlobCache::default(),
            "t",
            Some(&policy(old)),
            &policy(new),
            Scope::ALL,
            &Budget::per_tool(),
        )
        .into_iter()
        .map(|f| f.witness.unwrap())
        .collect()
    }

    /// Issue 18 item 15: reaching one repository's hooks excused a grant on another's.
    #[test]
    fn escalations_are_compared_path_by_path() {
        let old = r#"{"fs": {"write": ["/srv/repo-a/**"]}}"#;
        let new = r#"{"fs": {"write": ["/srv/repo-a/**", "/srv/repo-b/.git/hooks/*"]}}"#;
        let found = new_escalations(old, new);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("/srv/repo-b/.git/hooks"), "{found:?}");
        // The same hooks as before are not new.
        assert!(
            new_escalations(old, r#"{"fs": {"write": ["/srv/repo-a/**", "/tmp/x"]}}"#).is_empty()
        );
        // An old unspecified fs already reached every path.
        assert!(new_escalations("{}", new).is_empty());
        // A program the old policy could already replace is not new; a different one is.
        let old = r#"{"fs": {"write": ["/usr/bin/*"]}, "exec": {"allow": ["git"]}}"#;
        assert!(new_escalations(
            old,
            r#"{"fs": {"write": ["/usr/bin/*", "/opt/x"]}, "exec": {"allow": ["git"]}}"#
        )
        .is_empty());
        let found = new_escalations(
            old,
            r#"{"fs": {"write": ["/usr/bin/*"]}, "exec": {"allow": ["git", "rg"]}}"#,
        );
        assert_eq!(found, ["/usr/bin/rg"]);
    }

    /// `may_reach` skips a set only when no glob of it meets the trees or the `.git/hooks` run:
    /// every target other than git hooks and config must lie inside those trees (the read targets inside
    /// the first), or the shortcut would hide an escalation.
    #[test]
    fn target_trees_hold_every_target() {
        let trees = |n: usize| {
            let regexes: Vec<String> = TARGET_TREES[..n]
                .iter()
                .map(|t| Glob::new(t).unwrap().to_regex())
                .collect();
            Language::from_regexes(&regexes).unwrap()
        };
        let (all, proc) = (trees(TARGET_TREES.len()), trees(1));
        let anywhere = ["git hooks", "git config"];
        for target in targets()
            .each
            .iter()
            .filter(|t| !anywhere.contains(&t.name))
        {
            let within = if target.write { &all } else { &proc };
            let outside = find_witness(
                &[
                    Term::member(Language::paths()),
                    Term::member(&target.language),
                    Term::non_member(within),
                ],
                WitnessOrder::Paths,
                &Budget::per_tool(),
            );
            assert_eq!(
                outside,
                Ok(None),
                "{} reaches outside the trees",
                target.name
            );
        }
        // And the shortcut really skips what it can: a glob far from every target.
        assert!(!may_reach(&Glob::new("/srv/app/*.log").unwrap(), true));
        assert!(!may_reach(&Glob::new("/var/lib/svc/*/x.db").unwrap(), true));
        assert!(may_reach(&Glob::new("/srv/*/hooks/x").unwrap(), true));
        assert!(may_reach(&Glob::new("/srv/**/config").unwrap(), true));
        assert!(may_reach(&Glob::new("/*/x/environ").unwrap(), false));
    }

    #[test]
    fn finds_each_kind() {
        assert_eq!(
            targets_of(r#"{"fs": {"write": ["/repo/**", "/home/**"]}}"#),
            vec![
                ("git hooks".into(), "/home/.git/hooks".into()),
                ("git config".into(), "/home/.git/config".into()),
                ("shell startup files".into(), "/home/a/.cshrc".into()),
                ("ssh directory".into(), "/home/a/.ssh".into()),
            ]
        );
        assert_eq!(
            targets_of(r#"{"fs": {"write": ["/usr/bin/*"]}, "exec": {"allow": ["git"]}}"#),
            vec![("program git".into(), "/usr/bin/git".into())]
        );
        assert_eq!(
            targets_of(r#"{"fs": {"read": ["/proc/*/*"]}}"#),
            vec![("process environments".into(), "/proc/a/environ".into())]
        );
        assert_eq!(
            targets_of(r#"{"fs": {"write": ["/proc/self/mem"]}}"#)[0].0,
            "process memory"
        );
        assert!(
            targets_of(r#"{"fs": {"write": ["/out/*.json"]}, "exec": {"allow": ["git"]}}"#)
                .is_empty()
        );
        assert!(targets_of(r#"{"exec": "allow"}"#).is_empty());
    }
}
