//! `exec`: which programs a tool may start. Unspecified is allow (see the policy model in
//! `policy-runtime/docs/policy.md`).
//!
//! An unspecified `exec` that becomes an explicit `"allow"` is flagged as a widening although
//! both start any program: the declaration now grants exec openly, and a reviewer must see that.
//!
//! Allow-list entries are compared as written: `git` (looked up on `PATH` when the tool runs)
//! and `/usr/bin/git` are different grants, because the bare name can resolve to another file
//! than the path does, and the path is not covered by the name for the same reason.

use policy_runtime::policy::{ExecPolicy, ProgramName, Stance, ToolPolicy};

use crate::findings::{Code, Finding};

/// The programs one side may start: the policy's effective `exec` stance
/// ([`ToolPolicy::exec_stance`]; unspecified and `allow` admit anything, `deny` and an empty
/// list nothing).
pub type Programs<'a> = Stance<'a, ProgramName>;

fn admits(programs: &Programs<'_>, program: &str) -> bool {
    programs.admits_any(|p| p.as_str() == program)
}

/// Programs shown when "any program" needs a concrete example.
const EXAMPLES: [&str; 4] = ["/bin/sh", "/usr/bin/curl", "sh", "curl"];

/// A program that `admitted` may start and `rejected` may not.
///
/// ```
/// use manifest_verify::exec::program_witness;
/// use policy_runtime::policy::{ProgramName, Stance};
///
/// let old: Vec<ProgramName> = vec!["rg".parse().unwrap()];
/// let new: Vec<ProgramName> = vec!["rg".parse().unwrap(), "/usr/bin/git".parse().unwrap()];
/// let w = program_witness(Stance::Only(&new), Stance::Only(&old));
/// assert_eq!(w.as_deref(), Some("/usr/bin/git"));
/// assert_eq!(program_witness(Stance::Anything, Stance::Nothing).as_deref(), Some("/bin/sh"));
/// ```
pub fn program_witness(admitted: Programs<'_>, rejected: Programs<'_>) -> Option<String> {
    match admitted {
        Stance::Nothing => None,
        Stance::Only(list) => list
            .iter()
            .map(ProgramName::as_str)
            .find(|p| !admits(&rejected, p))
            .map(str::to_string),
        Stance::Anything => {
            let count = match rejected {
                Stance::Only(l) => l.len(),
                Stance::Anything => return None,
                Stance::Nothing => 0,
            };
            EXAMPLES
                .into_iter()
                .map(String::from)
                .chain((0..=count).map(|i| format!("/usr/bin/program{i}")))
                .find(|p| !admits(&rejected, p))
        }
    }
}

/// Widening and narrowing findings of `exec`.
pub fn diff(tool: &str, old: &ToolPolicy, new: &ToolPolicy) -> Vec<Finding> {
    let (o, n) = (old.exec_stance(), new.exec_stance());
    let text = |p: &ToolPolicy| {
        p.exec
            .as_ref()
            .map(|e| serde_json::to_string(e).expect("serializes"))
    };
    let make = |code, message: String, witness: String| Finding {
        code,
        tool: tool.to_string(),
        path: format!("tools.{tool}.exec"),
        message,
        witness: Some(witness),
        old: text(old),
        new: text(new),
    };
    let mut out = Vec::new();
    if let Some(w) = program_witness(n, o) {
        let why = match (n, new.exec.is_none()) {
            (Stance::Anything, true) => " (exec is now unspecified, which allows any program)",
            (Stance::Anything, false) => " (exec is now \"allow\")",
            _ => "",
        };
        out.push(make(
            Code::ExecWidened,
            format!("`{tool}` may now start `{w}`{why}, which the old policy did not allow"),
            w,
        ));
    }
    if old.exec.is_none() && matches!(new.exec, Some(ExecPolicy::Allow)) {
        // Both sides admit every program, so there is no program to show: the witness is the
        // grant itself.
        out.push(make(
            Code::ExecWidened,
            format!(
                "`{tool}` now declares exec \"allow\" where exec was unspecified: it runs alike, but the policy grants any program openly"
            ),
            "exec=allow".to_string(),
        ));
    }
    if let Some(w) = program_witness(o, n) {
        out.push(make(
            Code::ExecNarrowed,
            format!("`{tool}` may no longer start `{w}`"),
            w,
        ));
    }
    out
}
