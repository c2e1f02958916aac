//! The demo agent confining itself under the union of its tools' policies.
//!
//! Before it replays the transcript, `agent-demo` forks its [`crate::runner`] (which starts the
//! subprocess tools in their strict sandboxes), then calls `sandbox::confine_self` with the
//! union of every tool's policy ([`agent_policy`]): from then on the agent process, and
//! anything it could start, can read and write only what one of its tools may, can connect
//! only to its tools' TCP ports and cannot trace, mount or make namespaces.
//!
//! The agent's own needs are not in the union, and need not be: the audit log is opened and the
//! manifests are written before confining (an open descriptor stays usable; opening the file
//! again is refused), and they are protected paths ([`protected_list`]), as are the world's
//! `~/.ssh` and shell start-up files and the project's git hooks and config.

use std::path::Path;
use std::sync::Arc;

use policy_runtime::protected::{ProtectedKind, ProtectedPaths};
use policy_runtime::tool::Tool;
use policy_runtime::union::union;
use policy_runtime::ToolPolicy;
use sandbox::plan::Plan;
use sandbox::Enforcement;

use crate::trace::Style;

/// The union of the tools' declared policies.
pub fn agent_policy(tools: &[Arc<dyn Tool>]) -> ToolPolicy {
    union(tools.iter().map(|t| &t.spec().policy))
}

/// The protected paths of the demo: the defaults for the world's project and home, plus the
/// agent's own audit log and manifests.
///
/// # Errors
///
/// An own file is not an absolute path.
pub fn protected_list(
    world: &Path,
    own: &[(&Path, ProtectedKind)],
) -> Result<ProtectedPaths, String> {
    let mut list = ProtectedPaths::defaults(&world.join("project"), &world.join("home"));
    for (path, kind) in own {
        list.add_file(path, *kind).map_err(|e| e.to_string())?;
    }
    Ok(list)
}

/// The report as lines for the terminal: one per rule and per protected path.
pub fn report_lines(plan: &Plan, style: Style) -> Vec<String> {
    let status = |e: &Enforcement| match e {
        Enforcement::Exact => (style.ok("exact      "), None),
        Enforcement::Widened { to } => (style.warn("widened    "), Some(format!("to: {to}"))),
        Enforcement::NotEnforced { reason } => (style.bad("not enforced"), Some(reason.clone())),
    };
    let mut lines = Vec::new();
    for r in &plan.rules {
        let (word, detail) = status(&r.enforcement);
        lines.push(format!("{word} {}", r.rule));
        if let Some(d) = detail {
            lines.push(style.dim(&format!("             {d}")));
        }
    }
    // One line per kind and status (the shell start-up files are many).
    let mut groups: Vec<(String, &Enforcement, Vec<String>)> = Vec::new();
    for p in &plan.protected {
        let name = format!("{}{}", p.path.display(), if p.tree { "/**" } else { "" });
        let kind = p.kind.to_string();
        match groups
            .iter_mut()
            .find(|(k, e, _)| *k == kind && **e == p.enforcement)
        {
            Some((_, _, names)) => names.push(name),
            None => groups.push((kind, &p.enforcement, vec![name])),
        }
    }
    for (kind, enforcement, names) in groups {
        let (word, detail) = status(enforcement);
        lines.push(format!("{word} protected {kind}: {}", names.join(", ")));
        if let Some(d) = detail {
            lines.push(style.dim(&format!("             {d}")));
        }
    }
    lines
}
