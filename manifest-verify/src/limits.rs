//! `limits`: resource bounds of a subprocess tool. Unspecified is unbounded, so removing a
//! limit loosens it just as raising it does.

use policy_runtime::policy::{Limits, ToolPolicy};

use crate::findings::{Code, Finding};

/// One finding per limit whose value changed.
pub fn diff(tool: &str, old: &ToolPolicy, new: &ToolPolicy) -> Vec<Finding> {
    let text =
        |l: &Limits| (!l.is_unspecified()).then(|| serde_json::to_string(l).expect("serializes"));
    let shown = |v: Option<u64>| v.map_or("unlimited".to_string(), |v| v.to_string());
    let rank = |v: Option<u64>| v.map_or(u128::MAX, u128::from);
    old.limits
        .entries()
        .into_iter()
        .zip(new.limits.entries())
        .filter(|((_, o), (_, n))| o != n)
        .map(|((key, o), (_, n))| {
            let loosened = rank(n) > rank(o);
            Finding {
                code: if loosened {
                    Code::LimitsLoosened
                } else {
                    Code::LimitsNarrowed
                },
                tool: tool.to_string(),
                path: format!("tools.{tool}.limits.{key}"),
                message: format!(
                    "{key} of `{tool}` changed from {} to {}",
                    shown(o),
                    shown(n)
                ),
                witness: Some(format!("{key}={}", shown(n))),
                old: text(&old.limits),
                new: text(&new.limits),
            }
        })
        .collect()
}
