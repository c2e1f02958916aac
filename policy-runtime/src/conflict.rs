//! The cross-field rules of a policy: settings that are each valid alone but contradict each
//! other. They are checked once, here, for every source of a policy: the `#[tool]` attribute
//! (each conflict at its span), TOML and JSON policies and manifests (at the file, line and
//! field).
//!
//! - `only_after` may not name the tool itself: it could never run.
//! - A `forbidden = true` tool never runs, so `max_invocations`, a non-empty `only_after` and
//!   `requires_approval = true` contradict it.
//!
//! ```
//! use policy_runtime::conflict::Conflict;
//! use policy_runtime::ToolPolicy;
//!
//! let p = ToolPolicy::from_json_str("p.json", r#"{"constraints": {"only_after": ["fetch"]}}"#)?;
//! assert_eq!(p.conflicts(Some("fetch")), [Conflict::OnlyAfterItself { tool: "fetch".into() }]);
//! assert!(p.conflicts(Some("summarize")).is_empty());
//!
//! let err = ToolPolicy::from_json_str(
//!     "p.json",
//!     r#"{"constraints": {"forbidden": true, "max_invocations": 2}}"#,
//! )
//! .unwrap_err();
//! assert!(err.to_string().contains("`max_invocations` contradicts `forbidden = true`"));
//! # Ok::<(), policy_runtime::LoadError>(())
//! ```

use std::fmt;

use crate::policy::{Constraints, ToolPolicy};

/// Two settings of one policy that contradict each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Conflict {
    /// `only_after` names the tool itself, which could then never run.
    OnlyAfterItself {
        /// The tool's name.
        tool: String,
    },
    /// A constraint set on a `forbidden = true` tool, which never runs.
    ContradictsForbidden {
        /// The constraint: `max_invocations`, `only_after` or `requires_approval`.
        key: &'static str,
    },
}

impl Conflict {
    /// The constraint the conflict is reported at (`only_after`, `max_invocations`, ...).
    pub fn key(&self) -> &'static str {
        match self {
            Conflict::OnlyAfterItself { .. } => "only_after",
            Conflict::ContradictsForbidden { key } => key,
        }
    }

    /// The message for this conflict in the tool `tool`, where several tools are read at
    /// once (a manifest, a registry): it names the tool and the constraint.
    ///
    /// ```
    /// use policy_runtime::conflict::Conflict;
    ///
    /// let c = Conflict::ContradictsForbidden { key: "max_invocations" };
    /// assert!(c.in_tool("wipe").ends_with("(in tool `wipe`, `constraints.max_invocations`)"));
    /// ```
    pub fn in_tool(&self, tool: &str) -> String {
        format!("{self} (in tool `{tool}`, `constraints.{}`)", self.key())
    }
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Conflict::OnlyAfterItself { tool } => write!(
                f,
                "`{tool}` can never run if it must run after itself: remove `{tool}` from `only_after`"
            ),
            Conflict::ContradictsForbidden { key } => write!(
                f,
                "`{key}` contradicts `forbidden = true`: a forbidden tool never runs, so remove `{key}`, or remove `forbidden = true`"
            ),
        }
    }
}

impl Constraints {
    /// The constraints that contradict `forbidden = true`, in declaration order; none unless
    /// the tool is forbidden. (The checks that need no tool name, run wherever constraints
    /// are read.)
    pub fn forbidden_conflicts(&self) -> Vec<Conflict> {
        if self.forbidden != Some(true) {
            return Vec::new();
        }
        let set = [
            ("max_invocations", self.max_invocations.is_some()),
            (
                "only_after",
                self.only_after.as_ref().is_some_and(|l| !l.is_empty()),
            ),
            ("requires_approval", self.requires_approval == Some(true)),
        ];
        set.into_iter()
            .filter(|(_, set)| *set)
            .map(|(key, _)| Conflict::ContradictsForbidden { key })
            .collect()
    }
}

impl ToolPolicy {
    /// Every cross-field conflict of the policy of the tool `tool` (`None` when the name is not
    /// known, as for a single-tool policy file: then `only_after` cannot be checked against
    /// it). Empty for a consistent policy.
    pub fn conflicts(&self, tool: Option<&str>) -> Vec<Conflict> {
        let mut out = Vec::new();
        if let (Some(tool), Some(after)) = (tool, &self.constraints.only_after) {
            if after.iter().any(|a| a == tool) {
                out.push(Conflict::OnlyAfterItself {
                    tool: tool.to_string(),
                });
            }
        }
        out.extend(self.constraints.forbidden_conflicts());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(json: &str) -> ToolPolicy {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn each_rule() {
        let p = policy(r#"{"constraints": {"only_after": ["fetch", "probe"]}}"#);
        assert_eq!(
            p.conflicts(Some("probe")),
            [Conflict::OnlyAfterItself {
                tool: "probe".into()
            }]
        );
        assert!(p.conflicts(None).is_empty());
        let c = Constraints {
            forbidden: Some(true),
            max_invocations: Some(2),
            only_after: Some(vec![]),
            requires_approval: Some(true),
        };
        let keys: Vec<&str> = c.forbidden_conflicts().iter().map(Conflict::key).collect();
        assert_eq!(keys, ["max_invocations", "requires_approval"]);
        let allowed = Constraints {
            forbidden: Some(false),
            ..c
        };
        assert!(allowed.forbidden_conflicts().is_empty());
    }
}
