//! Running a tool's subprocess in the sandbox, under the tool's own declared policy.
//!
//! The tool bodies in [`crate::tools`] build an argv and call [`run`] with their generated
//! spec, so the policy that confines the subprocess is, by construction, the one in the
//! attribute and in the manifest.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use policy_runtime::tool::{CallContext, ToolError, ToolOutput, ToolSpec};
use sandbox::egress::BrokerOptions;
use sandbox::process_tool::{run_error, tool_result};
use sandbox::runner::{RunOptions, Stdio};

/// Process-wide settings of the sandboxed tools, set once by the program that hosts them.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// The hardened profile's trampoline binary (see [`sandbox::trampoline`]); `None` searches
    /// the default places.
    pub helper: Option<PathBuf>,
    /// How the egress broker resolves allowed names (the demo points them at local servers).
    pub broker: Option<BrokerOptions>,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

static LAST_REPORT: Mutex<Option<serde_json::Value>> = Mutex::new(None);

/// The audit report (sandbox plan, exit status, egress events) of the latest sandboxed run, for
/// displays that show it also when the tool failed.
pub fn take_last_report() -> Option<serde_json::Value> {
    LAST_REPORT.lock().ok()?.take()
}

/// Sets the settings; the first call wins.
pub fn configure(settings: Settings) {
    let _ = SETTINGS.set(settings);
}

fn options() -> RunOptions {
    let settings = SETTINGS.get().cloned().unwrap_or_default();
    let mut options = RunOptions::default().stdio(Stdio::Capture);
    if let Some(helper) = settings.helper {
        options = options.helper(helper);
    }
    if let Some(broker) = settings.broker {
        options = options.broker_options(broker);
    }
    options
}

/// Runs `argv` confined by `spec.policy` and turns the result into the tool's output with the
/// sandbox's own [`sandbox::process_tool::tool_result`]: the model sees stdout and stderr; the
/// audit event gets the enforcement report and every egress attempt, which
/// [`take_last_report`] also keeps for displays of failed runs. A refusal of the sandbox is a
/// [`ToolError::refused`]: nothing ever runs unconfined.
pub fn run(
    spec: &ToolSpec,
    argv: Vec<OsString>,
    cwd: Option<PathBuf>,
    _ctx: &CallContext,
) -> Result<ToolOutput, ToolError> {
    let mut options = options();
    if let Some(cwd) = cwd {
        options = options.cwd(cwd);
    }
    let out = sandbox::run(&spec.policy, &argv, &options).map_err(|e| run_error(&spec.name, e))?;
    if let Ok(mut last) = LAST_REPORT.lock() {
        *last = Some(out.audit());
    }
    tool_result(spec, &out)
}
