//! `env`: variable names and `PREFIX*` patterns compared exactly, with a variable witness.
//!
//! Unspecified inherits the whole environment (the universe); `"deny"` is the empty set.
//!
//! The decision needs no automaton: a `Q*` pattern is covered by a union of patterns exactly
//! when one of them is `P*` with `P` a prefix of `Q`, because a name may continue with a
//! character that no pattern can spell (patterns are letters, digits and `_`), so no finite set
//! of longer prefixes or exact names covers every name that starts with `Q`. The witness search
//! still prefers a valid-looking name and tries those first.

use policy_runtime::policy::{EnvPattern, Stance, ToolPolicy};

use crate::findings::{Code, Finding};

/// The variables one side lets through: the policy's effective `env` stance
/// ([`ToolPolicy::env_stance`]; unspecified inherits everything, `deny` and an empty list let
/// nothing through).
pub type Variables<'a> = Stance<'a, EnvPattern>;

fn admits(variables: &Variables<'_>, name: &str) -> bool {
    variables.admits_any(|p| p.matches(name))
}

/// Whether some `P*` of this side, with `P` a prefix of `q`, covers every `q…`.
fn covers_prefix(variables: &Variables<'_>, q: &str) -> bool {
    variables.admits_any(|p| p.prefix().is_some_and(|prefix| q.starts_with(prefix)))
}

/// Names tried first when any name will do.
const COMMON: [&str; 6] = ["HOME", "PATH", "USER", "SHELL", "LANG", "TERM"];
const NAME_CHARS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789abcdefghijklmnopqrstuvwxyz";

/// A variable name that `admitted` lets through and `rejected` does not.
///
/// ```
/// use manifest_verify::env::variable_witness;
/// use policy_runtime::policy::{EnvPattern, Stance};
///
/// let old: Vec<EnvPattern> = vec!["AWS_REGION".parse().unwrap()];
/// let new: Vec<EnvPattern> = vec!["AWS_*".parse().unwrap()];
/// let w = variable_witness(Stance::Only(&new), Stance::Only(&old));
/// assert_eq!(w.as_deref(), Some("AWS_A"));
/// assert_eq!(variable_witness(Stance::Only(&old), Stance::Only(&new)), None);
/// ```
pub fn variable_witness(admitted: Variables<'_>, rejected: Variables<'_>) -> Option<String> {
    match admitted {
        Stance::Nothing => None,
        Stance::Anything => prefix_witness("", &rejected),
        Stance::Only(patterns) => patterns.iter().find_map(|p| match p.prefix() {
            Some(q) => prefix_witness(q, &rejected),
            None => (!admits(&rejected, p.as_str())).then(|| p.as_str().to_string()),
        }),
    }
}

/// A name starting with `q` that `rejected` does not admit.
fn prefix_witness(q: &str, rejected: &Variables<'_>) -> Option<String> {
    if covers_prefix(rejected, q) {
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
        .find(|n| !admits(rejected, n));
    Some(found.unwrap_or_else(|| format!("{q}-")))
}

/// Widening and narrowing findings of `env`.
pub fn diff(tool: &str, old: &ToolPolicy, new: &ToolPolicy) -> Vec<Finding> {
    let (o, n) = (old.env_stance(), new.env_stance());
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
            Stance::Anything => "env is now unspecified, which inherits everything".into(),
            Stance::Only(p) => p
                .iter()
                .find(|p| p.matches(&w))
                .map_or_else(String::new, |p| format!("admitted by `{p}`")),
            Stance::Nothing => String::new(),
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
        variable_witness(Stance::Only(&n), Stance::Only(&o))
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
            variable_witness(Stance::Anything, Stance::Only(&o)).as_deref(),
            Some("PATH")
        );
        assert_eq!(variable_witness(Stance::Anything, Stance::Anything), None);
        assert_eq!(variable_witness(Stance::Nothing, Stance::Nothing), None);
    }

    #[test]
    fn every_one_char_continuation_listed_still_leaves_a_witness() {
        let mut old: Vec<String> = NAME_CHARS.chars().map(|c| format!("Q{c}*")).collect();
        old.push("Q".into());
        let old: Vec<&str> = old.iter().map(String::as_str).collect();
        assert_eq!(w(&["Q*"], &old).as_deref(), Some("Q-"));
    }
}
