//! Replaying a transcript of tool calls against the registry, and reporting what happened.
//!
//! A transcript is a plain JSON file (`examples/transcripts/injected.json`):
//!
//! ```json
//! {"description": "...",
//!  "steps": [{"say": "what the model says", "call": {"name": "read_file", "arguments": {"path": "/..."}},
//!             "expect": "denied"}]}
//! ```
//!
//! `expect` is optional: `allowed`, `denied`, `failed` or `refused`. The demo exits non-zero
//! when a step's verdict differs from its expectation, so an edited transcript doubles as a
//! test of the policies.

use std::fmt;
use std::path::Path;

use policy_runtime::registry::{CallStatus, Invocation, ToolCall, ToolResult};
use policy_runtime::tool::ToolErrorKind;
use serde::Deserialize;
use serde_json::Value;

use crate::trace::{indent, Style};

/// A scripted conversation.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transcript {
    /// What the scenario is.
    #[serde(default)]
    pub description: String,
    /// The model's calls, in order.
    pub steps: Vec<Step>,
}

/// One call of the model.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// What the model says before calling.
    #[serde(default)]
    pub say: String,
    /// The call.
    pub call: ToolCall,
    /// The verdict the scenario expects.
    #[serde(default)]
    pub expect: Option<Verdict>,
}

impl Transcript {
    /// Reads a transcript file; errors name the file, line and column.
    pub fn load(path: &Path) -> Result<Transcript, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// How a call ended, in the demo's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The body ran and succeeded.
    Allowed,
    /// Stopped before the body ran (gate, constraints, approval, unknown tool).
    Denied,
    /// The body ran and failed (in a sandboxed tool: the kernel said no to something).
    Failed,
    /// The sandbox would not start the tool on this host.
    Refused,
}

impl Verdict {
    /// The verdict of a result.
    pub fn of(result: &ToolResult) -> Verdict {
        match &result.status {
            CallStatus::Ok => Verdict::Allowed,
            CallStatus::Denied(_) => Verdict::Denied,
            CallStatus::Error(e) if e.kind() == ToolErrorKind::Refused => Verdict::Refused,
            CallStatus::Error(_) => Verdict::Failed,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Allowed => "allowed",
            Verdict::Denied => "denied",
            Verdict::Failed => "failed",
            Verdict::Refused => "refused",
        })
    }
}

/// One replayed step.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The step.
    pub step: Step,
    /// What happened.
    pub result: ToolResult,
    /// `result`'s verdict.
    pub verdict: Verdict,
    /// The sandbox's report of the run, for sandboxed tools.
    pub report: Option<Value>,
}

impl Outcome {
    /// Whether the verdict is the expected one (or nothing was expected).
    pub fn as_expected(&self) -> bool {
        self.step.expect.is_none_or(|e| e == self.verdict)
    }

    /// Which layer decided: the gate, a constraint, the sandbox, ...
    pub fn layer(&self) -> &'static str {
        match (&self.result.status, &self.result.metadata) {
            (CallStatus::Denied(d), _) => match d.code.as_str().split('.').next() {
                Some("fs") => "path gate",
                Some("net") => "net gate",
                Some("constraint") => "constraints",
                Some("approval") => "approval",
                Some("command") => "command policy",
                _ => "registry",
            },
            (CallStatus::Error(e), _) if e.kind() == ToolErrorKind::Refused => "sandbox (refused)",
            _ if self.report.is_some() => "sandbox",
            _ => "tool body",
        }
    }
}

/// Replays every step in one agent invocation, printing the trace as it goes.
pub fn replay(
    transcript: &Transcript,
    invocation: &mut Invocation<'_>,
    style: Style,
) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    let mut reported = std::collections::HashSet::new();
    for (i, step) in transcript.steps.iter().enumerate() {
        println!();
        println!(
            "{} {}",
            style.bold(&format!("[{:>2}]", i + 1)),
            style.dim(&step.say)
        );
        println!(
            "     {} {}",
            style.bold(&step.call.name),
            compact(&step.call.arguments)
        );
        let result = invocation.call_blocking(step.call.clone());
        let verdict = Verdict::of(&result);
        let outcome = Outcome {
            step: step.clone(),
            report: crate::sandboxed::take_last_report(),
            result,
            verdict,
        };
        let first_run = reported.insert(step.call.name.clone());
        print_outcome(&outcome, style, first_run);
        outcomes.push(outcome);
    }
    outcomes
}

fn print_outcome(o: &Outcome, style: Style, details: bool) {
    let label = match o.verdict {
        Verdict::Allowed => style.ok("ALLOWED"),
        Verdict::Denied => style.bad("DENIED "),
        Verdict::Failed => style.warn("FAILED "),
        Verdict::Refused => style.bad("REFUSED"),
    };
    let first = match &o.result.status {
        CallStatus::Denied(d) => format!("{} ({})", d.reason, d.code),
        _ => String::new(),
    };
    println!("     {label} by {} {first}", o.layer());
    if !matches!(o.result.status, CallStatus::Denied(_)) {
        let body = o.result.content.trim_end();
        if !body.is_empty() {
            println!("{}", style.dim(&indent(body, "       | ", 12)));
        }
    }
    if let Some(meta) = &o.report {
        print_sandbox(meta, style, details);
    }
    if !o.as_expected() {
        println!(
            "     {}",
            style.bad(&format!(
                "UNEXPECTED: the transcript expected {}",
                o.step.expect.map(|e| e.to_string()).unwrap_or_default()
            ))
        );
    }
}

/// Prints the sandbox's enforcement report (each rule only when `details`) and the egress
/// events from a run's audit metadata.
fn print_sandbox(meta: &Value, style: Style, details: bool) {
    let Some(sandbox) = meta.get("sandbox") else {
        return;
    };
    let profile = sandbox
        .get("profile")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let abi = sandbox
        .get("landlock_abi")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let rules = sandbox
        .get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let status = |r: &Value| {
        r.get("status")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    let exact = rules.iter().filter(|r| status(r) == "exact").count();
    println!(
        "     {}",
        style.dim(&format!(
            "sandbox: {profile} profile, Landlock ABI {abi}, {exact} of {} rules enforced exactly",
            rules.len()
        ))
    );
    for r in rules.iter().filter(|_| details) {
        let name = r.get("rule").and_then(Value::as_str).unwrap_or("?");
        let declared = r.get("declared").and_then(Value::as_bool).unwrap_or(false);
        let by: Vec<&str> = r
            .get("by")
            .and_then(Value::as_array)
            .map(|b| b.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match status(r).as_str() {
            "exact" if declared => {
                println!(
                    "     {}",
                    style.dim(&format!("  {name}: exact ({})", by.join(", ")))
                )
            }
            "widened" => println!(
                "     {}",
                style.warn(&format!(
                    "  {name}: widened to {}",
                    r.get("to").and_then(Value::as_str).unwrap_or("?")
                ))
            ),
            "not_enforced" => println!(
                "     {}",
                style.bad(&format!(
                    "  {name}: NOT enforced: {}",
                    r.get("reason").and_then(Value::as_str).unwrap_or("?")
                ))
            ),
            _ => {}
        }
    }
    if let Some(events) = meta.get("egress").and_then(Value::as_array) {
        for e in events {
            println!("     {}", style.dim(&format!("  egress: {}", compact(e))));
        }
    }
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 140 {
        format!("{}...", s.chars().take(137).collect::<String>())
    } else {
        s
    }
}

/// Prints the summary table and returns how many steps went against their expectation.
pub fn summary(outcomes: &[Outcome], style: Style) -> usize {
    println!();
    println!("{}", style.bold("Summary"));
    println!("   #  tool          verdict  decided by         expected");
    let mut unexpected = 0;
    for (i, o) in outcomes.iter().enumerate() {
        let verdict = format!("{:<8}", o.verdict.to_string());
        let verdict = match o.verdict {
            Verdict::Allowed => style.ok(&verdict),
            Verdict::Denied | Verdict::Refused => style.bad(&verdict),
            Verdict::Failed => style.warn(&verdict),
        };
        let expected = match o.step.expect {
            None => "-".to_string(),
            Some(_) if o.as_expected() => "yes".to_string(),
            Some(e) => {
                unexpected += 1;
                style.bad(&format!("NO (wanted {e})"))
            }
        };
        println!(
            "  {:>2}  {:<13} {} {:<18} {}",
            i + 1,
            o.step.call.name,
            verdict,
            o.layer(),
            expected
        );
    }
    let count = |v: Verdict| outcomes.iter().filter(|o| o.verdict == v).count();
    println!(
        "  {} allowed, {} denied, {} failed inside the sandbox, {} refused",
        count(Verdict::Allowed),
        count(Verdict::Denied),
        count(Verdict::Failed),
        count(Verdict::Refused)
    );
    unexpected
}
