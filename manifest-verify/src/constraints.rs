//! `constraints`: per-invocation limits on calling a tool.
//!
//! Unspecified `max_invocations` is unlimited, unspecified `only_after` is no prerequisite, and
//! unspecified `forbidden` / `requires_approval` are `false`. Each relaxed constraint is its own
//! `tool.constraints.loosened` finding; each tightened one is `tool.constraints.narrowed`.

use policy_runtime::policy::{Constraints, ToolPolicy};

use crate::findings::{Code, Finding};

/// Findings for every constraint that changed meaning.
pub fn diff(tool: &str, old: &ToolPolicy, new: &ToolPolicy) -> Vec<Finding> {
    let (o, n) = (&old.constraints, &new.constraints);
    let text = |c: &Constraints| {
        (!c.is_unspecified()).then(|| serde_json::to_string(c).expect("serializes"))
    };
    let mut out = Vec::new();
    let mut push = |loosened: bool, key: &str, message: String, witness: String| {
        out.push(Finding {
            code: if loosened {
                Code::ConstraintsLoosened
            } else {
                Code::ConstraintsNarrowed
            },
            tool: tool.to_string(),
            path: format!("tools.{tool}.constraints.{key}"),
            message,
            witness: Some(witness),
            old: text(o),
            new: text(n),
        });
    };

    let count = |m: Option<u32>| m.map_or("unlimited".to_string(), |m| m.to_string());
    // `None` is unlimited, so it orders above every number.
    let rank = |m: Option<u32>| m.map_or(u64::MAX, u64::from);
    if rank(n.max_invocations) != rank(o.max_invocations) {
        let loosened = rank(n.max_invocations) > rank(o.max_invocations);
        let witness = if loosened {
            // The first call the old policy refused.
            format!("invocation {}", rank(o.max_invocations) + 1)
        } else {
            format!("invocation {}", rank(n.max_invocations) + 1)
        };
        push(
            loosened,
            "max_invocations",
            format!(
                "max_invocations of `{tool}` changed from {} to {}",
                count(o.max_invocations),
                count(n.max_invocations)
            ),
            witness,
        );
    }

    let none: &[String] = &[];
    let old_after = o.only_after.as_deref().unwrap_or(none);
    let new_after = n.only_after.as_deref().unwrap_or(none);
    for gone in old_after.iter().filter(|t| !new_after.contains(t)) {
        push(
            true,
            "only_after",
            format!("`{tool}` no longer has to wait for `{gone}`"),
            gone.clone(),
        );
    }
    for added in new_after.iter().filter(|t| !old_after.contains(t)) {
        push(
            false,
            "only_after",
            format!("`{tool}` now has to wait for `{added}`"),
            added.clone(),
        );
    }

    for (key, was, is) in [
        ("forbidden", o.forbidden, n.forbidden),
        (
            "requires_approval",
            o.requires_approval,
            n.requires_approval,
        ),
    ] {
        let (was, is) = (was.unwrap_or(false), is.unwrap_or(false));
        if was != is {
            push(
                was,
                key,
                format!("{key} of `{tool}` changed from {was} to {is}"),
                format!("{key}={is}"),
            );
        }
    }
    out
}
