//! Running a tool's subprocess in the sandbox, under the tool's own declared policy.
//!
//! The tool bodies in [`crate::tools`] build an argv and call [`run`] with their generated
//! spec, so the policy that confines the subprocess is, by construction, the one in the
//! attribute and in the manifest.
//!
//! The same route with the sandbox crate's own [`sandbox::ProcessTool`], for a program of your
//! own (this is the README's example): the gate judges `path` before the body runs, and the
//! subprocess runs under the generated `grep::tool_spec()`.
//!
//! ```no_run
//! use std::ffi::OsString;
//! use policy_macros::tool;
//! use policy_runtime::{ReadPath, tool::{CallContext, ToolError, ToolOutput}};
//!
//! /// Search files for a pattern (grep runs in the sandbox).
//! #[tool(policy(fs.read = ["/srv/agent/data/**"], net = deny, exec = ["grep"], env = deny, risk = low),
//!        limits(timeout_ms = 5000, max_output_bytes = 65536))]
//! pub fn grep(pattern: String, path: ReadPath, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
//!     let argv: Vec<OsString> = vec!["grep".into(), "-rn".into(), "--".into(), pattern.into(), path.into_path_buf().into()];
//!     sandbox::ProcessTool::new(grep::tool_spec().clone(), move |_| Ok(argv.clone()))
//!         .call_blocking(Some(ctx), &serde_json::Value::Null)
//! }
//!
//! let registry = policy_runtime::macro_support::registry_of(policy_runtime::tools![grep])?;
//! let result = registry.start_invocation().call_blocking(policy_runtime::ToolCall::new(
//!     "grep",
//!     serde_json::json!({"pattern": "TODO", "path": "/srv/agent/data"}),
//! ));
//! println!("{}", result.content);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

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
    /// The hardened profile's helper binary, started once as its zygote (see
    /// [`sandbox::trampoline`]); `None` searches the default places.
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
/// [`ToolError::refused`]: nothing ever runs unconfined. When the agent started a
/// [`crate::runner`] (because it confines itself), the run is the runner's.
pub fn run(
    spec: &ToolSpec,
    argv: Vec<OsString>,
    cwd: Option<PathBuf>,
    _ctx: &CallContext,
) -> Result<ToolOutput, ToolError> {
    let (audit, result) = if crate::runner::started() {
        crate::runner::request(spec, argv, cwd)
    } else {
        run_here(spec, argv, cwd)
    };
    if let (Some(audit), Ok(mut last)) = (audit, LAST_REPORT.lock()) {
        *last = Some(audit);
    }
    result
}

/// [`run`] in this process: the run's audit report (when it ran) and the tool's result.
pub(crate) fn run_here(
    spec: &ToolSpec,
    argv: Vec<OsString>,
    cwd: Option<PathBuf>,
) -> (Option<serde_json::Value>, Result<ToolOutput, ToolError>) {
    let mut options = options();
    if let Some(cwd) = cwd {
        options = options.cwd(cwd);
    }
    match sandbox::run(&spec.policy, &argv, &options) {
        Ok(out) => (Some(out.audit()), tool_result(spec, &out)),
        Err(e) => (None, Err(run_error(&spec.name, e))),
    }
}
