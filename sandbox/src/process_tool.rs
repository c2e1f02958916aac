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

use crate::runner::{run, RunError, RunOptions, Stdio};

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
        let out = run(&self.spec.policy, &argv, &options).map_err(|e| match e {
            RunError::Refused(why) | RunError::Helper(why) => ToolError::refused(format!(
                "sandbox refused to run `{}`: {why}",
                self.spec.name
            )),
            RunError::Exec { message, .. } => ToolError::new(message),
        })?;
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.stdout_truncated {
            text.push_str("\n[output truncated]");
        }
        if out.timed_out {
            return Err(ToolError::new(format!(
                "`{}` was killed at its timeout of {} ms",
                self.spec.name,
                self.spec.policy.limits.timeout_ms.unwrap_or_default()
            )));
        }
        if !out.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(ToolError::new(format!(
                "`{}` failed with status {}: {}",
                self.spec.name,
                out.status_code(),
                stderr.trim_end()
            )));
        }
        Ok(ToolOutput::from(text).with_metadata(out.audit()))
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
