//! `risk`: the class that drives approval hooks. Unspecified means `medium` ([`policy_runtime::reference::policy`]).

use policy_runtime::policy::ToolPolicy;

use crate::findings::{Code, Finding};

/// `tool.risk.lowered` or `tool.risk.narrowed` when the effective class changed.
pub fn diff(tool: &str, old: &ToolPolicy, new: &ToolPolicy) -> Vec<Finding> {
    let (o, n) = (old.effective_risk(), new.effective_risk());
    if o == n {
        return Vec::new();
    }
    let code = if n < o {
        Code::RiskLowered
    } else {
        Code::RiskNarrowed
    };
    let shown = |p: &ToolPolicy| match p.risk {
        Some(r) => r.to_string(),
        None => format!("{} (unspecified)", p.effective_risk()),
    };
    let verb = if n < o { "lowered" } else { "raised" };
    vec![Finding {
        code,
        tool: tool.to_string(),
        path: format!("tools.{tool}.risk"),
        message: format!(
            "the risk class of `{tool}` was {verb} from {} to {}",
            shown(old),
            shown(new)
        ),
        witness: Some(n.to_string()),
        old: old.risk.map(|r| r.to_string()),
        new: new.risk.map(|r| r.to_string()),
    }]
}
