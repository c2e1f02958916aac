//! [`ProcessTool`]: a runtime [`Tool`] whose body is a sandboxed subprocess.
//!
//! The tool's policy is its [`ToolSpec`]'s; a function turns the JSON arguments into argv.
//! Every failure is a [`ToolError`] — a refusal of the sandbox is
//! [`ToolError::refused`], so the runtime reports it and nothing runs unconfined.
//!
//! ```no_run
//! use policy_runtime::tool::{ToolError, ToolSpec};
//! use policy_runtime::ToolPolicy;
//! use sandbox::ProcessTool;
//!
//! let policy = ToolPolicy::from_json_str("grep", r#"{"fs": {"read": ["/src/**"]}, "exec": {"allow": ["rg"]}}"#)?;
//! let tool = ProcessTool::new(ToolSpec::new("grep", policy), |args| {
//!     let pattern = args["pattern"].as_str().ok_or_else(|| ToolError::invalid_arguments("pattern: a string"))?;
//!     Ok(vec!["rg".into(), "--".into(), pattern.into(), "/src".into()])
//! });
//! # let _ = tool;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ffi::OsString;
use std::sync::Arc;

use policy_runtime::tool::{CallContext, Tool, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::Value;

use crate::runner::{run, RunError, RunOptions, RunOutput, Stdio};

type ArgvFn = dyn Fn(&Value) -> Result<Vec<OsString>, ToolError> + Send + Sync;

/// A subprocess tool confined by its own policy.
#[derive(Clone)]
pub struct ProcessTool {
    spec: ToolSpec,
    argv: Arc<ArgvFn>,
    options: RunOptions,
}

impl std::fmt::Debug for ProcessTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessTool")
            .field("spec", &self.spec.name)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl ProcessTool {
    /// A tool that runs the argv `argv(args)` under `spec.policy`.
    pub fn new<F>(spec: ToolSpec, argv: F) -> ProcessTool
    where
        F: Fn(&Value) -> Result<Vec<OsString>, ToolError> + Send + Sync + 'static,
    {
        ProcessTool {
            spec,
            argv: Arc::new(argv),
            options: RunOptions::default(),
        }
    }

    /// Run options (profile, helper, egress sink). Standard streams are always captured.
    pub fn with_options(mut self, options: RunOptions) -> ProcessTool {
        self.options = options;
        self
    }

    /// Runs synchronously: the same as the [`Tool::call`] future.
    pub fn call_blocking(
        &self,
        ctx: Option<&CallContext>,
        args: &Value,
    ) -> Result<ToolOutput, ToolError> {
        let argv = (self.argv)(args)?;
        let mut options = self.options.clone().stdio(Stdio::Capture);
        if let Some(cwd) = ctx.and_then(|c| c.cwd.clone()) {
            options = options.cwd(cwd);
        }
        let out =
            run(&self.spec.policy, &argv, &options).map_err(|e| run_error(&self.spec.name, e))?;
        tool_result(&self.spec, &out)
    }
}

impl Tool for ProcessTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, ctx: &'a CallContext, args: Value) -> ToolFuture<'a> {
        Box::pin(async move { self.call_blocking(Some(ctx), &args) })
    }
}

/// The [`ToolError`] for a run that did not happen: a refusal of the sandbox (or a missing
/// helper) is [`ToolError::refused`], so nothing is ever retried unconfined.
pub fn run_error(tool: &str, error: RunError) -> ToolError {
    match error {
        RunError::Refused(why) | RunError::Helper(why) => {
            ToolError::refused(format!("sandbox refused to run `{tool}`: {why}"))
        }
        RunError::SetUp(refusal) => {
            ToolError::refused(format!("sandbox refused to run `{tool}`: {refusal}"))
        }
        RunError::Exec { message, .. } | RunError::StatusLost(message) => ToolError::new(message),
    }
}

/// What a finished run means to the model: stdout, then stderr when there is any (so the
/// model can see what the kernel refused), with truncation marked; an error for a timeout or a
/// non-zero status; the run's [`RunOutput::audit`] as the output's metadata.
pub fn tool_result(spec: &ToolSpec, out: &RunOutput) -> Result<ToolOutput, ToolError> {
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.stdout_truncated {
        text.push_str("\n[stdout truncated at the tool's max_output_bytes]");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.trim().is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[stderr]\n{}", stderr.trim_end()));
        if out.stderr_truncated {
            text.push_str("\n[stderr truncated at the tool's max_output_bytes]");
        }
    }
    if out.timed_out {
        return Err(ToolError::new(format!(
            "`{}` was killed at its timeout of {} ms",
            spec.name,
            spec.policy.limits.timeout_ms.unwrap_or_default()
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
    Ok(ToolOutput::from(text).with_metadata(out.audit()))
}
