//! Running a tool's subprocess in the sandbox, under the tool's own declared policy.
//!
//! The tool bodies in [`crate::tools`] build an argv and call [`run`] with their generated
//! spec, so the policy that confines the subprocess is, by construction, the one in the
//! attribute and in the manifest.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use policy_runtime::tool::{CallContext, ToolError, ToolOutput, ToolSpec};
use sandbox::egress::{BrokerOptions, EgressEvent};
use sandbox::runner::{RunError, RunOptions, Stdio};

/// Process-wide settings of the sandboxed tools, set once by the program that hosts them.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// The trampoline binary (see [`sandbox::trampoline`]); `None` searches the default places.
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

/// Runs `argv` confined by `spec.policy` and turns the result into the tool's output.
///
/// The model sees stdout and stderr (so it can tell what failed); the audit event gets the
/// sandbox's enforcement report and every egress connection attempt. A refusal of the sandbox
/// is a [`ToolError::refused`]: nothing ever runs unconfined.
pub fn run(
    spec: &ToolSpec,
    argv: Vec<OsString>,
    cwd: Option<PathBuf>,
    _ctx: &CallContext,
) -> Result<ToolOutput, ToolError> {
    let egress: Arc<Mutex<Vec<EgressEvent>>> = Arc::default();
    let sink = egress.clone();
    let mut options = options().egress_sink(Arc::new(move |e| {
        if let Ok(mut events) = sink.lock() {
            events.push(e);
        }
    }));
    if let Some(cwd) = cwd {
        options = options.cwd(cwd);
    }
    let out = sandbox::run(&spec.policy, &argv, &options).map_err(|e| match e {
        RunError::Exec { message, .. } => ToolError::new(message),
        refused => ToolError::refused(format!(
            "the sandbox refused to run `{}`: {refused}",
            spec.name
        )),
    })?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.trim().is_empty() {
        text.push_str(&format!("[stderr]\n{}", stderr.trim_end()));
    }
    if out.stdout_truncated || out.stderr_truncated {
        text.push_str("\n[output truncated at the tool's max_output_bytes]");
    }
    let mut metadata = out.audit();
    let events = egress.lock().map(|e| e.clone()).unwrap_or_default();
    metadata["egress"] = serde_json::to_value(events).unwrap_or_default();
    if let Ok(mut last) = LAST_REPORT.lock() {
        *last = Some(metadata.clone());
    }
    if out.timed_out {
        return Err(ToolError::new(format!(
            "`{}` was killed at its timeout",
            spec.name
        )));
    }
    if !out.success() {
        return Err(ToolError::new(format!(
            "`{}` exited with status {}:\n{}",
            spec.name,
            out.status_code(),
            text.trim_end()
        )));
    }
    Ok(ToolOutput::from(text).with_metadata(metadata))
}
