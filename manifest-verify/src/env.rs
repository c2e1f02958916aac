//! `env`: variable names and `PREFIX*` patterns compared exactly, with a variable witness.
//!
//! Unspecified inherits the whole environment (the universe); `"deny"` is the empty set.
//!
//! The decision needs no automaton: a `Q*` pattern is covered by a union of patterns exactly
//! when one of them is `P*` with `P` a prefix of `Q`, because a name may continue with a
//! character that no pattern can spell (patterns are letters, digits and `_`), so no finite set
//! of longer prefixes or exact names covers every name that starts with `Q`. The witness search
//! still prefers a valid-looking name and tries those first.

use policy_runtime::policy::{EnvPattern, EnvPolicy, ToolPolicy};

use crate::findings::{Code, Finding};

/// The variables one side lets through.
#[derive(Clone, Copy, Debug)]
pub enum Variables<'a> {
    /// `"deny"`: an empty environment.
    Nothing,
    /// `{"allow": [...]}`.
    Patterns(&'a [EnvPattern]),
    /// Unspecified: the whole environment is inherited.
    Everything,
}

impl<'a> Variables<'a> {
    /// The variables of a policy's `env`.
    pub fn of(env: Option<&'a EnvPolicy>) -> Variables<'a> {
        match env {
            None => Variables::Everything,
            Some(EnvPolicy::Deny) => Variables::Nothing,
            Some(EnvPolicy::Allow(list)) => Variables::Patterns(list),
        }
    }

    fn admits(&self, name: &str) -> bool {
        match self {
            Variables::Nothing => false,
            Variables::Everything => true,
            Variables::Patterns(p) => p.iter().any(|p| p.matches(name)),
        }
    }

    /// Whether some `P*` of this side, with `P` a prefix of `q`, covers every `q…`.
    fn covers_prefix(&self, q: &str) -> bool {
        match self {
            Variables::Nothing => false,
            Variables::Everything => true,
            Variables::Patterns(p) => p
                .iter()
                .any(|p| p.prefix().is_some_and(|prefix| q.starts_with(prefix))),
        }
    }
}

/// Names tried first when any name will do.
const COMMON: [&str; 6] = ["HOME", "PATH", "USER", "SHELL", "LANG", "TERM"];
const NAME_CHARS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789abcdefghijklmnopqrstuvwxyz";

/// A variable name that `admitted` lets through and `rejected` does not.
///
/// ```
/// use manifest_verify::env::{variable_witness, Variables};
/// use policy_runtime::policy::EnvPattern;
///
/// let old: Vec<EnvPattern> = vec!["AWS_REGION".parse().unwrap()];
/// let new: Vec<EnvPattern> = vec!["AWS_*".parse().unwrap()];
/// let w = variable_witness(Variables::Patterns(&new), Variables::Patterns(&old));
/// assert_eq!(w.as_deref(), Some("AWS_A"));
/// assert_eq!(variable_witness(Variables::Patterns(&old), Variables::Patterns(&new)), None);
/// ```
pub fn variable_witness(admitted: Variables<'_>, rejected: Variables<'_>) -> Option<String> {
    match admitted {
        Variables::Nothing => None,
        Variables::Everything => prefix_witness("", &rejected),
        Variables::Patterns(patterns) => patterns.iter().find_map(|p| match p.prefix() {
            Some(q) => prefix_witness(q, &rejected),
            None => (!rejected.admits(p.as_str())).then(|| p.as_str().to_string()),
        }),
    }
}

/// A name starting with `q` that `rejected` does not admit.
fn prefix_witness(q: &str, rejected: &Variables<'_>) -> Option<String> {
    if rejected.covers_prefix(q) {
        return None;
    }
    let looks_whole = !q.is_empty() && !q.ends_with('_');
    let common = COMMON
        .iter()
        .filter(|c| c.starts_with(q))
        .map(|c| c.to_string());
    let own = looks_whole.then(|| q.to_string());
    // Names one and two characters longer; past that, a character no pattern can spell.
    let one = NAME_CHARS.chars().map(move |c| format!("{q}{c}"));
    let two = NAME_CHARS
        .chars()
        .flat_map(move |a| NAME_CHARS.chars().map(move |b| format!("{q}{a}{b}")));
    let found = own
        .into_iter()
        .chain(common)
        .chain(one)
        .chain(two)
        .filter(|n| n.parse::<EnvPattern>().is_ok())
        .find(|n| !rejected.admits(n));
    Some(found.unwrap_or_else(|| format!("{q}-")))
}

/// Widening and narrowing findings of `env`.
pub fn diff(tool: &str, old: &ToolPolicy, new: &ToolPolicy) -> Vec<Finding> {
    let (o, n) = (
        Variables::of(old.env.as_ref()),
        Variables::of(new.env.as_ref()),
    );
    let text = |p: &ToolPolicy| {
        p.env
            .as_ref()
            .map(|e| serde_json::to_string(e).expect("serializes"))
    };
    let make = |code, message: String, witness: String| Finding {
        code,
        tool: tool.to_string(),
        path: format!("tools.{tool}.env"),
        message,
        witness: Some(witness),
        old: text(old),
        new: text(new),
    };
    let mut out = Vec::new();
    if let Some(w) = variable_witness(n, o) {
        let why = match n {
            Variables::Everything => "env is now unspecified, which inherits everything".into(),
            Variables::Patterns(p) => p
                .iter()
                .find(|p| p.matches(&w))
                .map_or_else(String::new, |p| format!("admitted by `{p}`")),
            Variables::Nothing => String::new(),
        };
        out.push(make(
            Code::EnvWidened,
            format!("`{tool}` may now see `{w}` ({why}), which the old policy withheld"),
            w,
        ));
    }
    if let Some(w) = variable_witness(o, n) {
        out.push(make(
            Code::EnvNarrowed,
            format!("`{tool}` no longer sees `{w}`"),
            w,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pats(list: &[&str]) -> Vec<EnvPattern> {
        list.iter().map(|p| p.parse().unwrap()).collect()
    }

    fn w(new: &[&str], old: &[&str]) -> Option<String> {
        let (n, o) = (pats(new), pats(old));
        variable_witness(Variables::Patterns(&n), Variables::Patterns(&o))
    }

    #[test]
    fn cases() {
        assert_eq!(w(&["AWS_REGION"], &["AWS_*"]), None);
        assert_eq!(w(&["AWS_S3_*"], &["AWS_*"]), None);
        assert_eq!(w(&["AWS_*"], &["AWS_S3_*"]).as_deref(), Some("AWS_A"));
        assert_eq!(w(&["HOME", "LANG"], &["LANG", "HOME", "HOME"]), None);
        assert_eq!(w(&["HOMEX"], &["HOME"]).as_deref(), Some("HOMEX"));
        assert_eq!(w(&["X*"], &["X"]).as_deref(), Some("XA"));
        assert_eq!(w(&["X*"], &["X*"]), None);
        assert_eq!(w(&["*"], &["A*"]).as_deref(), Some("HOME"));
        let o = pats(&["HOME"]);
        assert_eq!(
            variable_witness(Variables::Everything, Variables::Patterns(&o)).as_deref(),
            Some("PATH")
        );
        assert_eq!(
            variable_witness(Variables::Everything, Variables::Everything),
            None
        );
        assert_eq!(
            variable_witness(Variables::Nothing, Variables::Nothing),
            None
        );
    }

    #[test]
    fn every_one_char_continuation_listed_still_leaves_a_witness() {
        let mut old: Vec<String> = NAME_CHARS.chars().map(|c| format!("Q{c}*")).collect();
        old.push("Q".into());
        let old: Vec<&str> = old.iter().map(String::as_str).collect();
        assert_eq!(w(&["Q*"], &old).as_deref(), Some("Q-"));
    }
}
