//! `tool.escalation`: grants that amount to more than they say.
//!
//! * writing a program the tool may start (an absolute allow-list entry, or a bare name in one
//!   of the usual `PATH` directories) turns an exec allow-list into "run anything";
//! * writing `.git/hooks` (anywhere) runs code at the next git command, writing a shell rc file
//!   (in a home directory — `/root`, `/home/*`, `/Users/*`, `/var/home/*` — or the system-wide
//!   ones in `/etc`) at the next shell, and writing `/proc/*/mem` rewrites a running process;
//! * reading `/proc/*/environ` reads other processes' secrets.
//!
//! Only declared globs count: an unspecified `fs` part is already reported as a widening of its
//! own, and "exec allow" already permits any program. An escalation is reported when the new
//! policy has it and the old one (if the tool existed) did not have the same one.

use std::sync::OnceLock;

use policy_runtime::policy::{ExecPolicy, ToolPolicy};

use crate::findings::{Code, Finding};
use crate::fs::{GlobCache, PathSet};
use crate::inclusion::{find_witness, Language, Term, WitnessOrder};

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
    language: Language,
}

fn targets() -> &'static [Target] {
    static TARGETS: OnceLock<Vec<Target>> = OnceLock::new();
    TARGETS.get_or_init(|| {
        let t = |name, write, why, res: &[&str]| Target {
            name,
            write,
            why,
            language: Language::from_regexes(res).expect("escalation targets compile"),
        };
        vec![
            t(
                "git hooks",
                true,
                "a file in .git/hooks runs as code at the next git command",
                &[r"^(?:/[^/]+)*/\.git/hooks(?:/[^/]+)*$"],
            ),
            t(
                "shell startup files",
                true,
                "a shell rc file runs as code at the next shell",
                &[
                    r"^(?:/root|/home/[^/]+|/Users/[^/]+|/var/home/[^/]+)/(?:\.bashrc|\.bash_profile|\.bash_login|\.bash_logout|\.profile|\.zshrc|\.zshenv|\.zprofile|\.zlogin|\.kshrc|\.cshrc|\.tcshrc|\.config/fish/config\.fish)$",
                    r"^/etc/(?:profile|bash\.bashrc|bashrc|zshrc|zshenv|zprofile|zlogin|zsh/zshrc|zsh/zshenv|zsh/zprofile|zsh/zlogin|environment)$",
                    r"^/etc/profile\.d/[^/]+$",
                ],
            ),
            t(
                "process memory",
                true,
                "writing /proc/*/mem rewrites a running process",
                &[r"^/proc/[^/]+/(?:task/[^/]+/)?mem$"],
            ),
            t(
                "process environments",
                false,
                "reading /proc/*/environ reads other processes' secrets",
                &[r"^/proc/[^/]+/(?:task/[^/]+/)?environ$"],
            ),
        ]
    })
}

/// Every escalation of one policy, in a stable order.
pub fn escalations(cache: &mut GlobCache, policy: &ToolPolicy) -> Vec<Escalation> {
    let mut out = Vec::new();
    let writable = declared(&[policy.fs.write.as_ref()]);
    let readable = declared(&[policy.fs.read.as_ref(), policy.fs.write.as_ref()]);

    if let (Some(PathSet::Globs(globs)), Some(ExecPolicy::AllowList(programs))) =
        (&writable, &policy.exec)
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

    for target in targets() {
        let (set, part) = if target.write {
            (&writable, "fs.write")
        } else {
            (&readable, "fs.read")
        };
        let Some(set) = set else { continue };
        let Some(lang) = cache.language(set) else {
            continue;
        };
        let Ok(lang) = lang.as_ref() else { continue };
        let terms = [
            Term::member(Language::paths()),
            Term::member(&target.language),
            Term::member(lang),
        ];
        if let Ok(Some(witness)) = find_witness(&terms, WitnessOrder::Paths) {
            out.push(Escalation {
                target: target.name.to_string(),
                part,
                witness,
                why: target.why,
            });
        }
    }
    out
}

/// The union of the declared lists, or `None` when none is declared.
fn declared<'a>(lists: &[Option<&'a policy_runtime::GlobList>]) -> Option<PathSet<'a>> {
    let lists: Vec<_> = lists.iter().flatten().map(|l| Some(l.globs())).collect();
    (!lists.is_empty()).then(|| PathSet::union(lists))
}

/// `tool.escalation` findings for escalations of `new` that `old` (when given) did not have.
pub fn diff(
    cache: &mut GlobCache,
    tool: &str,
    old: Option<&ToolPolicy>,
    new: &ToolPolicy,
) -> Vec<Finding> {
    let before = old.map(|o| escalations(cache, o)).unwrap_or_default();
    escalations(cache, new)
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
        escalations(&mut GlobCache::default(), &policy(json))
            .into_iter()
            .map(|e| (e.target, e.witness))
            .collect()
    }

    #[test]
    fn finds_each_kind() {
        assert_eq!(
            targets_of(r#"{"fs": {"write": ["/repo/**", "/home/**"]}}"#),
            vec![
                ("git hooks".into(), "/home/.git/hooks".into()),
                ("shell startup files".into(), "/home/a/.cshrc".into()),
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
