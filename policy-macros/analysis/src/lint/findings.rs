//! The one verdict and the one findings type of both tiers.
//!
//! [`judge`] decides, for one catalogued use the [walker](super::walk) found, whether the
//! tool's policy allows it, is violated by it, or cannot vouch for it (unanalysable code). A
//! [`Finding`] is what a tier reports: tier 1 turns each into a `compile_error!` at the call's
//! span (`At` is the span), tier 2 into a report line, JSON and SARIF (`At` is a
//! [`Location`]). [`Rule`] names what was found, with the texts that SARIF and the
//! documentation show for it.

use serde::Serialize;

use policy_runtime::ToolPolicy;

use super::capability::{beyond_declaration, violation_message, Capability, Effect, Grants};
use super::walk::Use;

/// What the policy says about one use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The policy grants it.
    Allowed,
    /// The policy does not grant the capability, or the call's literal argument lies outside
    /// what it declares; the message says what to widen or remove.
    Violated(String),
    /// The code cannot be analysed and the policy does not grant everything.
    Unanalysable(String),
}

impl Verdict {
    /// The message, unless allowed.
    pub fn message(&self) -> Option<&str> {
        match self {
            Verdict::Allowed => None,
            Verdict::Violated(m) | Verdict::Unanalysable(m) => Some(m),
        }
    }
}

/// The verdict on `used` in the tool `tool` whose policy is `policy` (and `grants` what it
/// grants, [`Grants::from_policy`], computed once per tool).
///
/// ```
/// use policy_analysis::lint::capability::{Capability, Effect, Grants};
/// use policy_analysis::lint::findings::{judge, Verdict};
/// use policy_analysis::lint::walk::Use;
///
/// let policy: policy_runtime::ToolPolicy = serde_json::from_str(r#"{"fs": {"read": ["/data/**"]}}"#)?;
/// let grants = Grants::from_policy(&policy);
/// let read = |literal: &str| Use {
///     call: "std::fs::read".into(),
///     effect: Effect::Uses(Capability::FsRead),
///     literal: Some(literal.into()),
/// };
/// assert_eq!(judge(&policy, &grants, "t", &read("/data/a")), Verdict::Allowed);
/// assert!(matches!(judge(&policy, &grants, "t", &read("/etc/shadow")), Verdict::Violated(_)));
/// let asm = Use { call: "asm!".into(), effect: Effect::Unanalysable, literal: None };
/// assert!(matches!(judge(&policy, &grants, "t", &asm), Verdict::Unanalysable(_)));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn judge(policy: &ToolPolicy, grants: &Grants, tool: &str, used: &Use) -> Verdict {
    if grants.allows_effect(used.effect) {
        let outside = beyond_declaration(
            &used.call,
            used.effect,
            used.literal.as_deref(),
            Some(tool),
            policy,
        );
        return outside.map_or(Verdict::Allowed, Verdict::Violated);
    }
    let message = violation_message(&used.call, used.effect, Some(tool), policy);
    match used.effect {
        Effect::Uses(_) => Verdict::Violated(message),
        Effect::Unanalysable => Verdict::Unanalysable(message),
    }
}

/// What a finding is about: the stable codes of the lint (the JSON field `code`, the SARIF
/// `ruleId`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// A capability used without being granted (or a literal outside the declaration).
    Uses(Capability),
    /// Code that cannot be analysed, in a tool that does not grant everything.
    Unanalysable,
    /// Code the lint could not read at all: the verdict does not cover it.
    Incomplete,
}

impl Rule {
    /// Every rule, in the order SARIF lists them.
    pub const ALL: [Rule; 7] = [
        Rule::Uses(Capability::FsRead),
        Rule::Uses(Capability::FsWrite),
        Rule::Uses(Capability::Net),
        Rule::Uses(Capability::Exec),
        Rule::Uses(Capability::Env),
        Rule::Unanalysable,
        Rule::Incomplete,
    ];

    /// The rule of a use's effect.
    pub fn of(effect: Effect) -> Rule {
        match effect {
            Effect::Uses(c) => Rule::Uses(c),
            Effect::Unanalysable => Rule::Unanalysable,
        }
    }

    /// `lint.fs.read`, `lint.fs.write`, `lint.net`, `lint.exec`, `lint.env`,
    /// `lint.unanalysable`, `lint.incomplete`.
    pub fn id(self) -> &'static str {
        match self {
            Rule::Uses(Capability::FsRead) => "lint.fs.read",
            Rule::Uses(Capability::FsWrite) => "lint.fs.write",
            Rule::Uses(Capability::Net) => "lint.net",
            Rule::Uses(Capability::Exec) => "lint.exec",
            Rule::Uses(Capability::Env) => "lint.env",
            Rule::Unanalysable => "lint.unanalysable",
            Rule::Incomplete => "lint.incomplete",
        }
    }

    /// The capability, for a use.
    pub fn capability(self) -> Option<Capability> {
        match self {
            Rule::Uses(c) => Some(c),
            Rule::Unanalysable | Rule::Incomplete => None,
        }
    }

    /// One line: what was found.
    pub fn summary(self) -> &'static str {
        match self {
            Rule::Uses(Capability::FsRead) => "A tool reads files its policy does not declare",
            Rule::Uses(Capability::FsWrite) => "A tool writes files its policy does not declare",
            Rule::Uses(Capability::Net) => "A tool uses the network beyond its policy",
            Rule::Uses(Capability::Exec) => "A tool starts programs its policy does not allow",
            Rule::Uses(Capability::Env) => {
                "A tool reads or changes environment variables its policy does not allow"
            }
            Rule::Unanalysable => "A tool calls code that cannot be analysed",
            Rule::Incomplete => {
                "Code that the lint could not read, so the verdict does not cover it"
            }
        }
    }

    /// What the rule checks and why it matters.
    pub fn description(self) -> String {
        match self {
            Rule::Uses(c) => format!(
                "The tool's body, or a function it calls, makes a call that {} (by the \
                 capability catalog), but the tool's policy does not grant `{}`, or the call's \
                 literal argument lies outside what `{}` declares. The sandbox and the gate \
                 enforce the policy, so the call fails at run time; the declaration and the \
                 code disagree.",
                c.verb(),
                c.key(),
                c.key()
            ),
            Rule::Unanalysable => "The tool reaches code whose effect the lint cannot know: a \
                 raw system call, a foreign function, `asm!`, dynamic loading. It may use any \
                 capability, so only a policy that grants every capability passes."
                .to_string(),
            Rule::Incomplete => "A file or module could not be read (it does not parse, is \
                 too large or too deeply nested, is missing, or is not a regular file). The \
                 tools defined or called there were not checked."
                .to_string(),
        }
    }

    /// What to do about it, in Markdown.
    pub fn help_markdown(self) -> String {
        match self {
            Rule::Uses(c) => format!(
                "Declare the capability in the tool's policy (for example `{}`), narrowly, or \
                 remove the call. If the call is reached through a helper, the result's code \
                 flow shows the path from the tool.",
                c.example()
            ),
            Rule::Unanalysable => "Move the call out of the tool, or grant every capability \
                 (`fs.write`, `net = allow`, `exec = allow`, `env` unspecified) if the tool \
                 really needs it."
                .to_string(),
            Rule::Incomplete => "Fix the reported problem (the notification names the file \
                 and line), or move the tool's code where the lint can read it."
                .to_string(),
        }
    }

    /// The heading of the rule's row in the finding codes reference
    /// (`policy-runtime/docs/findings.md`), as a Markdown anchor.
    pub fn anchor(self) -> &'static str {
        "capability-lint-codes"
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

/// One step of the call path from a tool to an offending call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The function, as `module::function` or `module::Type::method`.
    pub function: String,
    /// Its file.
    pub file: String,
    /// The line where it makes the next call (for the last step: the offending call).
    pub line: usize,
}

/// Where in a source file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Location {
    /// The file, relative to the analysed directory when possible.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Length of the call's name, for highlighting.
    #[serde(skip)]
    pub len: usize,
}

/// A use a tool's policy does not allow, at `At`: a span for tier 1, a [`Location`] for tier 2.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding<At> {
    /// What was found.
    pub code: Rule,
    /// The tool's name.
    pub tool: String,
    /// The capability used, or `None` for unanalysable code.
    #[serde(serialize_with = "capability_key")]
    pub capability: Option<Capability>,
    /// The call, fully qualified (`std::fs::write`).
    pub call: String,
    /// The widen-or-remove message.
    pub message: String,
    /// Where.
    #[serde(flatten)]
    pub at: At,
    /// From the tool to the function making the call (tier 2; empty in tier 1, where the call
    /// is in the tool's own body).
    pub call_path: Vec<Step>,
}

impl<At> Finding<At> {
    /// The finding for `used` at `at`, unless the verdict allows it.
    pub fn of(verdict: Verdict, tool: &str, used: &Use, at: At) -> Option<Finding<At>> {
        let (code, message) = match verdict {
            Verdict::Allowed => return None,
            Verdict::Violated(m) | Verdict::Unanalysable(m) => (Rule::of(used.effect), m),
        };
        Some(Finding {
            code,
            tool: tool.to_string(),
            capability: code.capability(),
            call: used.call.clone(),
            message,
            at,
            call_path: Vec::new(),
        })
    }
}

fn capability_key<S: serde::Serializer>(c: &Option<Capability>, s: S) -> Result<S::Ok, S::Error> {
    match c {
        Some(c) => s.serialize_str(c.key()),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_a_distinct_id_and_texts() {
        let mut ids = std::collections::HashSet::new();
        for rule in Rule::ALL {
            assert!(ids.insert(rule.id()), "{rule}");
            assert!(rule.id().starts_with("lint."));
            assert!(!rule.summary().is_empty() && !rule.description().is_empty());
            assert!(!rule.help_markdown().is_empty());
        }
    }

    #[test]
    fn a_finding_serializes_flat_with_its_location() {
        let used = Use {
            call: "std::fs::write".into(),
            effect: Effect::Uses(Capability::FsWrite),
            literal: None,
        };
        let policy = ToolPolicy::default();
        let verdict = judge(&policy, &Grants::from_policy(&policy), "t", &used);
        let at = Location {
            file: "src/lib.rs".into(),
            line: 3,
            column: 5,
            len: 14,
        };
        let finding = Finding::of(verdict, "t", &used, at).unwrap();
        let json = serde_json::to_value(&finding).unwrap();
        assert_eq!(json["code"], "lint.fs.write");
        assert_eq!(json["capability"], "fs.write");
        assert_eq!(json["file"], "src/lib.rs");
        assert_eq!(json["line"], 3);
        assert!(
            json.get("len").is_none() && json.get("at").is_none(),
            "{json}"
        );
    }
}
