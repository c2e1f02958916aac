//! Dispatch: a [`Registry`] of tools and, per agent invocation, an [`Invocation`] that runs
//! calls through gate → constraints → approval → body → events.
//!
//! ```
//! use policy_runtime::registry::{Registry, ToolCall};
//! use policy_runtime::tool::{fn_tool, Access, ToolSpec};
//! use policy_runtime::policy::ToolPolicy;
//!
//! let policy = ToolPolicy::from_json_str("p", r#"{"fs": {"read": ["/data/**"]}, "constraints": {"max_invocations": 1}}"#)?;
//! let mut registry = Registry::new();
//! registry.register(fn_tool(
//!     ToolSpec::new("read_file", policy).path_arg("path", Access::Read),
//!     |_ctx, args| Ok(format!("read {}", args["path"]).into()),
//! )).unwrap();
//!
//! let mut run = registry.start_invocation();
//! let ok = run.call_blocking(ToolCall::new("read_file", serde_json::json!({"path": "/data/a"})));
//! assert!(ok.is_ok());
//! let denied = run.call_blocking(ToolCall::new("read_file", serde_json::json!({"path": "/etc/passwd"})));
//! assert!(denied.denial().is_some());
//! let again = run.call_blocking(ToolCall::new("read_file", serde_json::json!({"path": "/data/b"})));
//! assert_eq!(again.denial().unwrap().code.as_str(), "constraint.max_invocations");
//! // A new invocation starts with fresh counters.
//! assert!(registry.start_invocation().call_blocking(ToolCall::new("read_file", serde_json::json!({"path": "/data/b"}))).is_ok());
//! # Ok::<(), policy_runtime::LoadError>(())
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::{Approval, ApprovalReason, ApprovalRequest, Approver};
use crate::audit::EventSink;
use crate::command::{check_command, Command, CommandForm, Level};
use crate::conflict::Conflict;
use crate::denial::{Denial, DenialCode};
use crate::event::{Event, EventKind};
use crate::gate::check_args;
use crate::manifest::Manifest;
use crate::policy::Risk;
use crate::redact::Redactor;
use crate::tool::{CallContext, Tool, ToolError};

/// A call proposed by the model.
///
/// ```
/// use policy_runtime::registry::ToolCall;
/// let call: ToolCall = serde_json::from_str(r#"{"name": "list_dir", "arguments": {"path": "/data"}}"#)?;
/// assert_eq!(call.name, "list_dir");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The model's call id; generated when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments object.
    #[serde(default = "empty_object", alias = "args")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

impl ToolCall {
    /// A call with no id.
    pub fn new(name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            id: None,
            name: name.into(),
            arguments,
        }
    }
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum CallStatus {
    /// The body ran and succeeded.
    Ok,
    /// Refused before the body ran.
    Denied(Denial),
    /// The body ran (or its arguments failed to parse) and returned an error.
    Error(ToolError),
}

/// The result of one call: what the model reads, and how it ended.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// The call id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// How it ended.
    pub status: CallStatus,
    /// Text for the model (output, denial reason or error), with secrets redacted.
    pub content: String,
    /// The tool's audit metadata, if it succeeded and gave any.
    pub metadata: Option<Value>,
}

impl ToolResult {
    /// The body ran and succeeded.
    pub fn is_ok(&self) -> bool {
        matches!(self.status, CallStatus::Ok)
    }

    /// The denial, if the call was refused.
    pub fn denial(&self) -> Option<&Denial> {
        match &self.status {
            CallStatus::Denied(d) => Some(d),
            _ => None,
        }
    }

    /// The error, if the body failed.
    pub fn error(&self) -> Option<&ToolError> {
        match &self.status {
            CallStatus::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a tool could not be registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Two tools share a name.
    #[error("a tool named `{0}` is already registered; tool names must be unique")]
    Duplicate(String),
    /// A name the model could not call.
    #[error("invalid tool name `{0}`: use letters, digits, `_` and `-`")]
    InvalidName(String),
    /// The tool's policy contradicts itself ([`crate::conflict`]), as the `#[tool]` attribute,
    /// a manifest and a policy file refuse too.
    #[error("{}", conflict.in_tool(tool))]
    Conflict {
        /// The tool's name.
        tool: String,
        /// The first contradiction.
        conflict: Conflict,
    },
}

type Hook = Box<dyn Fn(&Event) + Send + Sync>;

/// The tools of an agent, with the hooks and sinks that observe them.
pub struct Registry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    sinks: Vec<Arc<dyn EventSink>>,
    executed_hooks: Vec<Hook>,
    denied_hooks: Vec<Hook>,
    approver: Option<Arc<dyn Approver>>,
    approval_threshold: Option<Risk>,
    cwd: Option<PathBuf>,
    redactor: Redactor,
    manifest_hash: String,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// An empty registry with no approver, no threshold and no working directory.
    pub fn new() -> Registry {
        Registry {
            tools: BTreeMap::new(),
            sinks: Vec::new(),
            executed_hooks: Vec::new(),
            denied_hooks: Vec::new(),
            approver: None,
            approval_threshold: None,
            cwd: None,
            redactor: Redactor::new(),
            manifest_hash: Manifest::new().hash(),
        }
    }

    /// Adds a tool. Refused: a name already registered, a name the model could not call, and a
    /// policy that contradicts itself ([`ToolSpec::conflicts`](crate::tool::ToolSpec::conflicts)),
    /// for a spec built by hand as for one from `#[tool]`.
    ///
    /// ```
    /// use policy_runtime::registry::{Registry, RegistryError};
    /// use policy_runtime::tool::{fn_tool, ToolSpec};
    /// use policy_runtime::conflict::Conflict;
    /// use policy_runtime::policy::ToolPolicy;
    ///
    /// let mut policy = ToolPolicy::default();
    /// policy.constraints.only_after = Some(vec!["summarize".into()]);
    /// let tool = fn_tool(ToolSpec::new("summarize", policy), |_, _| Ok("ran".into()));
    /// let err = Registry::new().register(tool).err().unwrap();
    /// assert!(matches!(err, RegistryError::Conflict { conflict: Conflict::OnlyAfterItself { .. }, .. }));
    /// ```
    pub fn register(&mut self, tool: impl Tool + 'static) -> Result<&mut Registry, RegistryError> {
        self.register_arc(Arc::new(tool))
    }

    /// Adds a shared tool.
    pub fn register_arc(&mut self, tool: Arc<dyn Tool>) -> Result<&mut Registry, RegistryError> {
        let name = tool.spec().name.clone();
        if crate::tool::check_tool_name(&name).is_err() {
            return Err(RegistryError::InvalidName(name));
        }
        if self.tools.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        if let Some(conflict) = tool.spec().conflicts().into_iter().next() {
            return Err(RegistryError::Conflict {
                tool: name,
                conflict,
            });
        }
        self.tools.insert(name, tool);
        self.manifest_hash = self.manifest().hash();
        Ok(self)
    }

    /// Sends every event to `sink` (e.g. a [`crate::audit::JsonlSink`]).
    pub fn add_sink(&mut self, sink: Arc<dyn EventSink>) -> &mut Registry {
        self.sinks.push(sink);
        self
    }

    /// Calls `hook` with the `executed` or `failed` event of every call whose body ran.
    /// Denied calls never reach it.
    pub fn on_executed(&mut self, hook: impl Fn(&Event) + Send + Sync + 'static) -> &mut Registry {
        self.executed_hooks.push(Box::new(hook));
        self
    }

    /// Calls `hook` with every `denied` event.
    pub fn on_denied(&mut self, hook: impl Fn(&Event) + Send + Sync + 'static) -> &mut Registry {
        self.denied_hooks.push(Box::new(hook));
        self
    }

    /// Sets the approver consulted for calls that need approval.
    pub fn set_approver(&mut self, approver: Arc<dyn Approver>) -> &mut Registry {
        self.approver = Some(approver);
        self
    }

    /// Requires approval for every tool whose risk is at or above `risk`.
    pub fn require_approval_from(&mut self, risk: Risk) -> &mut Registry {
        self.approval_threshold = Some(risk);
        self
    }

    /// Sets the working directory relative path arguments are resolved against.
    pub fn set_cwd(&mut self, cwd: impl Into<PathBuf>) -> &mut Registry {
        self.cwd = Some(cwd.into());
        self
    }

    /// The registered tools, by name.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values()
    }

    /// One tool.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// The manifest of the registered tools.
    pub fn manifest(&self) -> Manifest {
        let mut m = Manifest::new();
        for tool in self.tools.values() {
            m.insert_spec(tool.spec());
        }
        m
    }

    /// The hash of [`Registry::manifest`], carried by every event.
    pub fn manifest_hash(&self) -> &str {
        &self.manifest_hash
    }

    /// Starts an agent invocation: counters for `max_invocations` and `only_after` start at
    /// zero and live only as long as the returned value.
    pub fn start_invocation(&self) -> Invocation<'_> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        Invocation {
            registry: self,
            id: format!("inv-{stamp:x}-{n}"),
            started: HashMap::new(),
            succeeded: HashSet::new(),
            next_call: 1,
        }
    }

    fn emit(&self, event: &Event) {
        for sink in &self.sinks {
            sink.record(event);
        }
        let hooks = match event.kind {
            EventKind::Denied { .. } => &self.denied_hooks,
            EventKind::Executed { .. } | EventKind::Failed { .. } => &self.executed_hooks,
            _ => return,
        };
        for hook in hooks {
            hook(event);
        }
    }
}

/// One agent invocation: runs calls and tracks the per-invocation constraints.
pub struct Invocation<'r> {
    registry: &'r Registry,
    id: String,
    started: HashMap<String, u32>,
    succeeded: HashSet<String>,
    next_call: u64,
}

impl Invocation<'_> {
    /// This invocation's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Runs one call to completion on the current thread.
    pub fn call_blocking(&mut self, call: ToolCall) -> ToolResult {
        pollster::block_on(self.call(call))
    }

    /// Runs one call: gate → constraints → approval → body, emitting events at each step.
    pub async fn call(&mut self, call: ToolCall) -> ToolResult {
        let registry = self.registry;
        let call_id = call.id.clone().unwrap_or_else(|| {
            let id = format!("call-{}", self.next_call);
            self.next_call += 1;
            id
        });
        let event = |kind| {
            Event::new(
                &self.id,
                &call_id,
                &call.name,
                &registry.manifest_hash,
                kind,
            )
        };
        registry.emit(&event(EventKind::Proposed {
            arguments: registry.redactor.redact_json(&call.arguments),
        }));

        let outcome = self.admit(&call);
        let (tool, args, command) = match outcome {
            Ok(admitted) => admitted,
            Err(denial) => {
                registry.emit(&event(EventKind::Denied {
                    code: denial.code,
                    reason: denial.reason.clone(),
                    argument: denial.argument.clone(),
                    path: denial.path.clone(),
                }));
                return ToolResult {
                    content: registry
                        .redactor
                        .redact(&denial.to_model_text(&call.name))
                        .into_owned(),
                    call_id,
                    tool: call.name,
                    status: CallStatus::Denied(denial),
                    metadata: None,
                };
            }
        };
        match self.approval(&*tool, &call.name, &args, command.as_ref()) {
            Ok(Some(approver)) => registry.emit(&event(EventKind::Approved { approver })),
            Ok(None) => {}
            Err(denial) => {
                registry.emit(&event(EventKind::Denied {
                    code: denial.code,
                    reason: denial.reason.clone(),
                    argument: None,
                    path: None,
                }));
                return ToolResult {
                    content: denial.to_model_text(&call.name),
                    call_id,
                    tool: call.name,
                    status: CallStatus::Denied(denial),
                    metadata: None,
                };
            }
        }

        *self.started.entry(call.name.clone()).or_default() += 1;
        let ctx = CallContext {
            tool: call.name.clone(),
            call_id: call_id.clone(),
            invocation_id: self.id.clone(),
            cwd: registry.cwd.clone(),
            manifest_hash: registry.manifest_hash.clone(),
        };
        let start = Instant::now();
        let result = tool.call(&ctx, args).await;
        let duration_us = start.elapsed().as_micros() as u64;
        match result {
            Ok(output) => {
                self.succeeded.insert(call.name.clone());
                registry.emit(&event(EventKind::Executed {
                    duration_us,
                    output_bytes: output.text.len(),
                    metadata: output.metadata.clone(),
                }));
                ToolResult {
                    content: registry.redactor.redact(&output.text).into_owned(),
                    call_id,
                    tool: call.name,
                    status: CallStatus::Ok,
                    metadata: output.metadata,
                }
            }
            Err(error) => {
                let message = registry.redactor.redact(error.message()).into_owned();
                registry.emit(&event(EventKind::Failed {
                    duration_us,
                    kind: error.kind(),
                    error: message.clone(),
                }));
                ToolResult {
                    content: format!("Error from `{}`: {message}", call.name),
                    call_id,
                    tool: call.name,
                    status: CallStatus::Error(error),
                    metadata: None,
                }
            }
        }
    }

    /// The decision [`Invocation::call`] would make for `call`, without running the tool's
    /// body or emitting events: the gate, the constraints (counted in this invocation) and the
    /// approval. `Ok` holds the arguments the body would receive.
    ///
    /// ```
    /// use policy_runtime::registry::{Registry, ToolCall};
    /// use policy_runtime::tool::{fn_tool, ToolSpec};
    /// use policy_runtime::policy::ToolPolicy;
    ///
    /// let policy = ToolPolicy::from_json_str("p", r#"{"constraints": {"requires_approval": true}}"#)?;
    /// let mut registry = Registry::new();
    /// registry.register(fn_tool(ToolSpec::new("t", policy), |_, _| Ok("ran".into()))).unwrap();
    /// let denial = registry.start_invocation().decide(&ToolCall::new("t", serde_json::json!({}))).unwrap_err();
    /// assert_eq!(denial.code.as_str(), "approval.denied");
    /// # Ok::<(), policy_runtime::LoadError>(())
    /// ```
    pub fn decide(&self, call: &ToolCall) -> Result<Value, Denial> {
        let (tool, args, command) = self.admit(call)?;
        self.approval(&*tool, &call.name, &args, command.as_ref())?;
        Ok(args)
    }

    /// Asks for approval when the policy or the registry's risk threshold wants it: `Ok(None)`
    /// when none is needed, `Ok(Some(approver))` when given, the denial otherwise (also when
    /// no approver is configured).
    fn approval(
        &self,
        tool: &dyn Tool,
        name: &str,
        args: &Value,
        command: Option<&CommandApproval>,
    ) -> Result<Option<String>, Denial> {
        let Some(approver) = self
            .needs_approval(tool)
            .or_else(|| command.map(|_| self.registry.approver.as_ref()))
        else {
            return Ok(None);
        };
        let policy = &tool.spec().policy;
        let risk = policy.effective_risk();
        let redacted = self.registry.redactor.redact_json(args);
        let reason = match command {
            _ if policy.constraints.requires_approval == Some(true) => ApprovalReason::Required,
            Some(c) => ApprovalReason::Command(c.level),
            None => ApprovalReason::Risk(risk),
        };
        let decision = match approver {
            Some(a) => (
                a.name().to_string(),
                a.decide(&ApprovalRequest {
                    tool: name,
                    arguments: &redacted,
                    risk,
                    reason,
                }),
            ),
            None => (
                String::new(),
                Approval::Deny("this call needs approval and no approver is configured".into()),
            ),
        };
        match decision {
            (approver, Approval::Approve) => Ok(Some(approver)),
            (_, Approval::Deny(why)) => Err(Denial::new(
                DenialCode::ApprovalDenied,
                match command {
                    Some(c) => format!(
                        "This command needs approval ({}): {}. Approval was refused: {why}.",
                        c.level, c.why
                    ),
                    None => format!("Approval was refused: {why}."),
                },
            )),
        }
    }

    /// Gate, command policy and constraints: the tool, its (rewritten) arguments and whether
    /// its command needs approval, or why not.
    fn admit(&self, call: &ToolCall) -> Result<Admitted, Denial> {
        let registry = self.registry;
        let tool = registry.tools.get(&call.name).cloned().ok_or_else(|| {
            let known: Vec<&str> = registry.tools.keys().map(String::as_str).collect();
            Denial::new(
                DenialCode::UnknownTool,
                format!(
                    "There is no tool named `{}`. Available tools: {}.",
                    call.name,
                    known.join(", ")
                ),
            )
        })?;
        if !call.arguments.is_object() {
            return Err(Denial::new(
                DenialCode::InvalidArguments,
                "The arguments must be a JSON object of named parameters.",
            ));
        }
        let spec = tool.spec();
        let mut args = call.arguments.clone();
        check_args(
            &spec.policy,
            &spec.path_args,
            &mut args,
            registry.cwd.as_deref(),
        )?;
        let command = check_commands(spec, &args, registry.cwd.as_deref())?;

        let c = &spec.policy.constraints;
        if c.forbidden == Some(true) {
            return Err(Denial::new(
                DenialCode::Forbidden,
                "This tool is forbidden by policy and can never be called. Use another tool.",
            ));
        }
        if let Some(max) = c.max_invocations {
            let used = self.started.get(&call.name).copied().unwrap_or(0);
            if used >= max {
                return Err(Denial::new(
                    DenialCode::MaxInvocations,
                    format!("It may run at most {max} time(s) per invocation and has already run {used} time(s)."),
                ));
            }
        }
        if let Some(after) = &c.only_after {
            let missing: Vec<&str> = after
                .iter()
                .filter(|t| !self.succeeded.contains(*t))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                return Err(Denial::new(
                    DenialCode::OnlyAfter,
                    format!(
                        "It may run only after {} succeeded in this invocation.",
                        quoted(&missing)
                    ),
                ));
            }
        }
        Ok((tool, args, command))
    }

    /// `None`: no approval needed; `Some(None)`: needed but no approver (deny).
    #[allow(clippy::option_option)]
    fn needs_approval(&self, tool: &dyn Tool) -> Option<Option<&Arc<dyn Approver>>> {
        let policy = &tool.spec().policy;
        let by_policy = policy.constraints.requires_approval == Some(true);
        let by_risk = self
            .registry
            .approval_threshold
            .is_some_and(|t| policy.effective_risk() >= t);
        (by_policy || by_risk).then_some(self.registry.approver.as_ref())
    }
}

/// What [`Invocation::admit`] lets through.
type Admitted = (Arc<dyn Tool>, Value, Option<CommandApproval>);

/// A command line that needs approval: its level and why.
struct CommandApproval {
    level: Level,
    why: String,
}

/// Judges every command argument of a call under the tool's command policy.
fn check_commands(
    spec: &crate::tool::ToolSpec,
    args: &Value,
    cwd: Option<&std::path::Path>,
) -> Result<Option<CommandApproval>, Denial> {
    if spec.policy.commands.is_none() {
        return Ok(None);
    }
    if spec.command_args.is_empty() {
        return Err(Denial::new(
            DenialCode::CommandNotAllowed,
            "This tool declares a command policy but no argument that carries its command, so no command can be judged.",
        ));
    }
    let mut approval = None;
    for arg in &spec.command_args {
        let value = args.get(&arg.name);
        let argv: Vec<String>;
        let command = match (arg.form, value) {
            (_, None | Some(Value::Null)) => continue,
            (CommandForm::Shell, Some(Value::String(s))) => Command::Shell(s),
            (CommandForm::Argv, Some(Value::Array(items)))
                if !items.is_empty() && items.iter().all(Value::is_string) =>
            {
                argv = items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect();
                Command::Argv(&argv)
            }
            (form, Some(_)) => {
                return Err(Denial {
                    argument: Some(format!("/{}", arg.name)),
                    ..Denial::new(
                        DenialCode::InvalidArguments,
                        format!(
                            "Argument `{}` must be {}.",
                            arg.name,
                            match form {
                                CommandForm::Shell => "a command line (a string)",
                                CommandForm::Argv => "a non-empty array of strings (program first)",
                            }
                        ),
                    )
                })
            }
        };
        let verdict = check_command(&spec.policy, command, cwd).map_err(|d| Denial {
            argument: Some(format!("/{}", arg.name)),
            ..d
        })?;
        if let Some(why) = verdict.approval {
            approval = Some(CommandApproval {
                level: verdict.level,
                why,
            });
        }
    }
    Ok(approval)
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
