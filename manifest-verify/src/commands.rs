//! `commands`: the command policy of an exec tool (`policy_runtime::command`). Unspecified
//! judges no command line, so removing the policy widens exec as much as anything can; within
//! a policy a higher `max_level`, a removed `deny_args` rule, chains newly allowed and a raised
//! or removed `approve_from` each loosen it.

use policy_runtime::command::{CommandPolicy, Level};
use policy_runtime::policy::ToolPolicy;

use crate::findings::{Code, Finding};

/// One finding per loosened or tightened setting of the command policy.
///
/// ```
/// use manifest_verify::{diff_manifests, Code};
/// use policy_runtime::Manifest;
///
/// let old = Manifest::from_json_str("old.json", r#"{"manifest_version": 1, "tools": {
///     "sh": {"exec": {"allow": ["sh"]}, "commands": {"max_level": 1}}}}"#)?;
/// let new = Manifest::from_json_str("new.json", r#"{"manifest_version": 1, "tools": {
///     "sh": {"exec": {"allow": ["sh"]}, "commands": {"max_level": 5, "chains": true}}}}"#)?;
/// let report = diff_manifests(&old, &new);
/// assert!(report.widened());
/// assert!(report.codes().contains(&Code::CommandsLevelRaised));
/// assert!(report.codes().contains(&Code::CommandsChainsAllowed));
/// # Ok::<(), policy_runtime::LoadError>(())
/// ```
pub fn diff(tool: &str, old: &ToolPolicy, new: &ToolPolicy) -> Vec<Finding> {
    let text = |p: &ToolPolicy| {
        p.commands
            .as_ref()
            .map(|c| serde_json::to_string(c).expect("serializes"))
    };
    let make = |code, key: &str, message: String, witness: String| Finding {
        code,
        tool: tool.to_string(),
        path: if key.is_empty() {
            format!("tools.{tool}.commands")
        } else {
            format!("tools.{tool}.commands.{key}")
        },
        message,
        witness: Some(witness),
        old: text(old),
        new: text(new),
    };
    let (o, n) = match (&old.commands, &new.commands) {
        (None, None) => return Vec::new(),
        (Some(_), None) => {
            return vec![make(
                Code::CommandsRemoved,
                "",
                format!("`{tool}` no longer has a command policy: its command lines are no longer judged (any level, any argument, any chain)"),
                "commands=unspecified".into(),
            )]
        }
        (None, Some(c)) => {
            return vec![make(
                Code::CommandsNarrowed,
                "",
                format!("`{tool}` now judges its command lines (up to {})", c.max_level),
                format!("max_level={}", c.max_level.number()),
            )]
        }
        (Some(o), Some(n)) => (o, n),
    };
    let mut out = Vec::new();
    if n.max_level != o.max_level {
        let raised = n.max_level > o.max_level;
        out.push(make(
            if raised {
                Code::CommandsLevelRaised
            } else {
                Code::CommandsNarrowed
            },
            "max_level",
            format!(
                "`{tool}` now runs commands up to {} (was {})",
                n.max_level, o.max_level
            ),
            format!("max_level={}", n.max_level.number()),
        ));
    }
    for (program, arg) in rules(o).filter(|r| !has_rule(n, r)) {
        out.push(make(
            Code::CommandsDenyRemoved,
            &format!("deny_args.{program}"),
            format!("`{tool}` may now run `{program} {arg}`, which its command policy denied"),
            format!("{program} {arg}"),
        ));
    }
    for (program, arg) in rules(n).filter(|r| !has_rule(o, r)) {
        out.push(make(
            Code::CommandsNarrowed,
            &format!("deny_args.{program}"),
            format!("`{tool}` may no longer run `{program} {arg}`"),
            format!("{program} {arg}"),
        ));
    }
    if n.chains != o.chains {
        out.push(make(
            if n.chains {
                Code::CommandsChainsAllowed
            } else {
                Code::CommandsNarrowed
            },
            "chains",
            if n.chains {
                format!("`{tool}` may now run chains (`|`, `&&`, `;`, subshells) in one call")
            } else {
                format!("`{tool}` may no longer run chains")
            },
            format!("chains={}", n.chains),
        ));
    }
    if n.approve_from != o.approve_from {
        // Unspecified asks for no approval: above every level.
        let rank = |l: Option<Level>| l.map_or(u8::MAX, Level::number);
        let shown =
            |l: Option<Level>| l.map_or("unspecified".to_string(), |l| l.number().to_string());
        let loosened = rank(n.approve_from) > rank(o.approve_from);
        out.push(make(
            if loosened {
                Code::CommandsApprovalLoosened
            } else {
                Code::CommandsNarrowed
            },
            "approve_from",
            format!(
                "`{tool}` asks for approval from level {} (was {})",
                shown(n.approve_from),
                shown(o.approve_from)
            ),
            format!("approve_from={}", shown(n.approve_from)),
        ));
    }
    out
}

fn rules(p: &CommandPolicy) -> impl Iterator<Item = (String, String)> + '_ {
    p.deny_args
        .iter()
        .flat_map(|(program, args)| args.iter().map(move |a| (program.to_string(), a.clone())))
}

fn has_rule(p: &CommandPolicy, (program, arg): &(String, String)) -> bool {
    p.denied_args(program).iter().any(|a| a == arg)
}
