//! `args`: the role of each path or URL argument (`read`, `write`, `any`, `url`).
//!
//! A role says what the gate admits through an argument and what the body may do with it, so a
//! change is a widening when the old role does not cover the new one
//! ([`Role::covers`]): `write → read` admits paths that are only readable, `read → write`
//! lets the body write, anything `→ any` lets it use an admitted path in any way, a path role ↔
//! `url` carries another kind of resource. A new path or URL argument is a widening too.
//!
//! Roles that are not recorded (`"args"` absent: a manifest written before roles, or built from
//! a policy file) are *unknown*, which covers every role: recording them is a narrowing,
//! dropping them a widening.

use std::collections::{BTreeMap, BTreeSet};

use policy_runtime::manifest::ToolEntry;
use policy_runtime::role::Role;

use crate::findings::{Code, Finding};

/// One finding per argument whose role changed, appeared or disappeared.
pub fn diff(tool: &str, old: &ToolEntry, new: &ToolEntry) -> Vec<Finding> {
    if old.args == new.args {
        return Vec::new();
    }
    let text = |a: &Option<BTreeMap<String, Role>>| {
        a.as_ref()
            .map(|a| serde_json::to_string(a).expect("roles serialize"))
    };
    let finding = |code, arg: Option<&str>, message: String| Finding {
        code,
        tool: tool.to_string(),
        path: match arg {
            Some(arg) => format!("tools.{tool}.args.{arg}"),
            None => format!("tools.{tool}.args"),
        },
        message,
        witness: arg.map(str::to_string),
        old: text(&old.args),
        new: text(&new.args),
    };
    let (o, n) = match (&old.args, &new.args) {
        (None, None) => return Vec::new(),
        (None, Some(n)) => {
            return n
                .iter()
                .map(|(arg, role)| {
                    finding(
                        Code::ArgsNarrowed,
                        Some(arg),
                        format!("argument `{arg}` of `{tool}` now records the role {role} (it was unknown)"),
                    )
                })
                .collect()
        }
        (Some(o), None) if o.is_empty() => {
            return vec![finding(
                Code::ArgsWidened,
                None,
                format!("`{tool}` no longer records its arguments' roles, so any argument may carry a path or URL of unknown use"),
            )]
        }
        (Some(o), None) => {
            return o
                .iter()
                .map(|(arg, role)| {
                    finding(
                        Code::ArgsWidened,
                        Some(arg),
                        format!("argument `{arg}` of `{tool}` changed from {role} to unknown (roles are no longer recorded), so the gate no longer holds it to {role}"),
                    )
                })
                .collect()
        }
        (Some(o), Some(n)) => (o, n),
    };
    let names: BTreeSet<&String> = o.keys().chain(n.keys()).collect();
    let mut out = Vec::new();
    for arg in names {
        match (o.get(arg).copied(), n.get(arg).copied()) {
            (None, Some(role)) => out.push(finding(
                Code::ArgsWidened,
                Some(arg),
                format!(
                    "`{tool}` has a new {} argument `{arg}` ({role})",
                    kind(role)
                ),
            )),
            (Some(role), None) => out.push(finding(
                Code::ArgsNarrowed,
                Some(arg),
                format!(
                    "argument `{arg}` of `{tool}` is no longer a {} argument (it was {role})",
                    kind(role)
                ),
            )),
            (Some(was), Some(now)) if was != now => {
                let widened = !Role::covers(Some(was), Some(now));
                out.push(finding(
                    if widened {
                        Code::ArgsWidened
                    } else {
                        Code::ArgsNarrowed
                    },
                    Some(arg),
                    format!(
                        "argument `{arg}` of `{tool}` changed role from {was} to {now}: {}",
                        consequence(was, now)
                    ),
                ));
            }
            _ => {}
        }
    }
    out
}

fn kind(role: Role) -> &'static str {
    match role {
        Role::Url => "URL",
        _ => "path",
    }
}

/// What a role change lets through, for the reviewer.
fn consequence(was: Role, now: Role) -> &'static str {
    match (was, now) {
        (Role::Write, Role::Read) => {
            "the gate now admits paths that are only readable (fs.read), which write refused"
        }
        (Role::Read, Role::Write) => "the body may now write through it",
        (_, Role::Any) => "the body may now use an admitted path in any way, writes included",
        (Role::Url, _) => "it now carries a path instead of a URL",
        (_, Role::Url) => "it now carries a URL instead of a path",
        (Role::Any, _) => "the body may now use it only as its new role says",
        _ => "its use changed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(args: Option<&[(&str, Role)]>) -> ToolEntry {
        ToolEntry {
            args: args.map(|a| a.iter().map(|(k, r)| (k.to_string(), *r)).collect()),
            ..ToolEntry::default()
        }
    }

    #[test]
    fn every_change_gets_its_direction() {
        use Role::*;
        for (was, now, widened) in [
            (Write, Read, true),
            (Read, Write, true),
            (Write, Any, true),
            (Read, Any, true),
            (Any, Read, false),
            (Any, Write, false),
            (Url, Read, true),
            (Any, Url, true),
        ] {
            let f = diff(
                "t",
                &entry(Some(&[("a", was)])),
                &entry(Some(&[("a", now)])),
            );
            assert_eq!(f.len(), 1);
            let want = if widened {
                Code::ArgsWidened
            } else {
                Code::ArgsNarrowed
            };
            assert_eq!(f[0].code, want, "{was} -> {now}");
            assert_eq!(f[0].path, "tools.t.args.a");
        }
    }

    #[test]
    fn unknown_covers_every_role() {
        let roles = entry(Some(&[("a", Role::Write), ("b", Role::Url)]));
        let f = diff("t", &entry(None), &roles);
        assert!(f.iter().all(|f| f.code == Code::ArgsNarrowed) && f.len() == 2);
        let f = diff("t", &roles, &entry(None));
        assert!(f.iter().all(|f| f.code == Code::ArgsWidened) && f.len() == 2);
        let f = diff("t", &entry(Some(&[])), &entry(None));
        assert_eq!(f[0].code, Code::ArgsWidened);
        assert_eq!(f[0].witness, None);
    }
}
