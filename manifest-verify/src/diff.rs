//! The comparison of two manifests, tool by tool.

use policy_runtime::manifest::{Manifest, ToolEntry};
use policy_runtime::policy::{Stance, ToolPolicy};

use crate::escalation::Scope;
use crate::findings::{Code, Finding, Report};
use crate::fs::{GlobCache, Operation};
use crate::inclusion::Budget;
use crate::{args, commands, constraints, env, escalation, exec, fs, hosts, limits, risk};

/// Compares manifests; keeps compiled glob sets and answered questions between comparisons.
///
/// One `Verifier` can diff many pairs; glob sets it has compiled once, and witness searches
/// it has answered once, are reused, which is what makes large manifests with shared globs
/// (or globs that differ only in their leading directories) cheap.
///
/// ```
/// use manifest_verify::{Code, Verifier};
/// use policy_runtime::Manifest;
///
/// let old = Manifest::from_json_str("old.json", r#"{"manifest_version": 1, "tools": {
///     "report": {"fs": {"write": ["/out/*"]}}}}"#)?;
/// let new = Manifest::from_json_str("new.json", r#"{"manifest_version": 1, "tools": {
///     "report": {"fs": {"write": ["/out/**"]}}}}"#)?;
/// let report = Verifier::new().diff(&old, &new);
/// assert!(report.widened());
/// let f = &report.findings[0];
/// assert_eq!(f.code, Code::FsReadWidened); // write implies read
/// assert_eq!(f.witness.as_deref(), Some("/out"));
/// assert_eq!(report.findings[1].code, Code::FsWriteWidened);
/// # Ok::<(), policy_runtime::LoadError>(())
/// ```
#[derive(Debug, Default)]
pub struct Verifier {
    globs: GlobCache,
}

impl Verifier {
    /// A verifier with an empty cache.
    pub fn new() -> Verifier {
        Verifier::default()
    }

    /// Every finding between `old` and `new`, sorted by tool name, then by part.
    pub fn diff(&mut self, old: &Manifest, new: &Manifest) -> Report {
        let mut findings = Vec::new();
        let mut olds = old.tools.iter().peekable();
        let mut news = new.tools.iter().peekable();
        loop {
            match (olds.peek(), news.peek()) {
                (None, None) => break,
                (Some((o, _)), Some((n, _))) if o == n => {
                    let (name, o) = olds.next().expect("peeked");
                    let (_, n) = news.next().expect("peeked");
                    self.diff_tool(name, o, n, &mut findings);
                }
                (Some((o, _)), Some((n, _))) if o < n => {
                    let (name, _) = olds.next().expect("peeked");
                    findings.push(removed(name));
                }
                (Some(_), None) => {
                    let (name, _) = olds.next().expect("peeked");
                    findings.push(removed(name));
                }
                (_, Some(_)) => {
                    let (name, entry) = news.next().expect("peeked");
                    findings.push(added(name, entry));
                    findings.extend(escalation::diff(
                        &mut self.globs,
                        name,
                        None,
                        &entry.policy,
                        Scope::ALL,
                        &Budget::per_tool(),
                    ));
                }
            }
        }
        Report { findings }
    }

    /// The findings of one tool present on both sides.
    pub fn diff_tool(
        &mut self,
        name: &str,
        old: &ToolEntry,
        new: &ToolEntry,
        out: &mut Vec<Finding>,
    ) {
        let (o, n) = (&old.policy, &new.policy);
        let first = out.len();
        out.extend(args::diff(name, old, new));
        // Equal texts mean equal meaning; most tools of a pull request are untouched.
        if o == n {
            return;
        }
        // One budget for all of this tool's automata searches (see `inclusion::Budget`).
        let budget = Budget::per_tool();
        out.extend(risk::diff(name, o, n));
        if o.fs != n.fs {
            let globs = &mut self.globs;
            out.extend(fs::diff(globs, name, Operation::Read, o, n, &budget));
            out.extend(fs::diff(globs, name, Operation::Write, o, n, &budget));
        }
        if o.net != n.net {
            out.extend(hosts::diff(name, o, n));
        }
        if o.exec != n.exec {
            out.extend(exec::diff(name, o, n));
        }
        if o.commands != n.commands {
            out.extend(commands::diff(name, o, n));
        }
        if o.env != n.env {
            out.extend(env::diff(name, o, n));
        }
        if o.constraints != n.constraints {
            out.extend(constraints::diff(name, o, n));
        }
        if o.limits != n.limits {
            out.extend(limits::diff(name, o, n));
        }
        if o.fs != n.fs || o.exec != n.exec {
            let widened = |code| out[first..].iter().any(|f: &Finding| f.code == code);
            let scope = Scope {
                write: widened(Code::FsWriteWidened),
                read: widened(Code::FsReadWidened),
            };
            out.extend(escalation::diff(
                &mut self.globs,
                name,
                Some(o),
                n,
                scope,
                &budget,
            ));
        }
    }

    /// How many distinct glob sets and residuals (see [`crate::fs::path_witness`]) have
    /// been compiled so far.
    pub fn compiled_glob_sets(&self) -> usize {
        self.globs.len()
    }
}

/// Compares two manifests with a fresh [`Verifier`].
///
/// ```
/// use manifest_verify::diff_manifests;
/// use policy_runtime::Manifest;
///
/// let old = Manifest::from_json_str("old.json", r#"{"manifest_version": 1, "tools": {
///     "t": {"fs": {"read": ["/out/**"]}}}}"#)?;
/// let new = Manifest::from_json_str("new.json", r#"{"manifest_version": 1, "tools": {
///     "t": {"fs": {"read": ["/out/sub/**", "/out/a"]}}}}"#)?;
/// let report = diff_manifests(&old, &new);
/// assert!(!report.widened()); // a narrowing, reported as information only
/// assert_eq!(report.codes(), [manifest_verify::Code::FsReadNarrowed]);
/// # Ok::<(), policy_runtime::LoadError>(())
/// ```
pub fn diff_manifests(old: &Manifest, new: &Manifest) -> Report {
    Verifier::new().diff(old, new)
}

fn removed(name: &str) -> Finding {
    Finding {
        code: Code::ToolRemoved,
        tool: name.to_string(),
        path: format!("tools.{name}"),
        message: format!("tool `{name}` was removed"),
        witness: None,
        old: Some(name.to_string()),
        new: None,
    }
}

fn added(name: &str, entry: &ToolEntry) -> Finding {
    let policy_text = serde_json::to_string(&entry.policy).expect("policies serialize");
    Finding {
        code: Code::ToolAdded,
        tool: name.to_string(),
        path: format!("tools.{name}"),
        message: format!("new tool `{name}`: {}", summary(&entry.policy)),
        witness: Some(name.to_string()),
        old: None,
        new: Some(policy_text),
    }
}

/// What a new tool may do, in one line: unspecified parts are spelled out, since they are the
/// widest grants. An unspecified fs list means "any path" only when the other one is
/// unspecified too; once either is declared the gate is active and counts it as empty (reads
/// may still use the `fs.write` paths, since writing implies reading).
fn summary(p: &ToolPolicy) -> String {
    let show = |v: Option<String>, unspecified: &str| v.unwrap_or_else(|| unspecified.to_string());
    let (read_unspecified, write_unspecified) = if p.fs.is_unspecified() {
        ("unspecified (any path)", "unspecified (any path)")
    } else {
        (
            "unspecified (only the fs.write paths)",
            "unspecified (no path)",
        )
    };
    format!(
        "risk {}, fs.read {}, fs.write {}, net {}, exec {}, commands {}, env {}",
        p.effective_risk(),
        show(p.fs.read.as_ref().map(json), read_unspecified),
        show(p.fs.write.as_ref().map(json), write_unspecified),
        show(
            p.net.as_ref().map(json),
            &unspecified(p.net_stance(), "deny", "allow")
        ),
        show(
            p.exec.as_ref().map(json),
            &unspecified(p.exec_stance(), "deny", "allow")
        ),
        show(p.commands.as_ref().map(json), "unspecified (not judged)"),
        show(
            p.env.as_ref().map(json),
            &unspecified(p.env_stance(), "empty", "inherit")
        ),
    )
}

/// How an unspecified part reads, in the words of its own reach: the stance decides what
/// unspecified means, so this label follows it instead of restating it.
fn unspecified<T>(stance: Stance<'_, T>, nothing: &str, anything: &str) -> String {
    match stance {
        Stance::Nothing => format!("unspecified ({nothing})"),
        Stance::Anything => format!("unspecified ({anything})"),
        Stance::Only(_) => "unspecified".to_string(),
    }
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("policy parts serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new tool's summary spells out what its unspecified parts grant, as the stances say.
    #[test]
    fn unspecified_parts_read_as_their_stance() {
        let text = summary(&ToolPolicy::default());
        for part in [
            "net unspecified (deny)",
            "exec unspecified (allow)",
            "commands unspecified (not judged)",
            "env unspecified (inherit)",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
        let declared = ToolPolicy::from_json_str("p", r#"{"net": "deny", "env": "deny"}"#).unwrap();
        let text = summary(&declared);
        assert!(text.contains(r#"net "deny""#), "{text}");
        assert!(text.contains(r#"env "deny""#), "{text}");
    }
}
