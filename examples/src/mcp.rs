//! The agent's tools served over the Model Context Protocol (the `mcp-server` binary).
//!
//! Each tool is a method with rmcp's `#[tool]` next to `#[tool_policy(...)]`, which carries the
//! same policy as the function in [`crate::tools`] it delegates to. A call passes three layers:
//!
//! 1. the `#[tool_policy]` gate at the top of the method judges the path arguments, before the
//!    body runs;
//! 2. the body hands the call to this MCP session's [`Invocation`] of a [`Registry`] of
//!    [`crate::tools::all`], which gates again, applies the constraints (`max_invocations`,
//!    `only_after`) per session, writes the audit log and runs the tool;
//! 3. the subprocess tools (`grep`, `run_tests`, `run_shell`, `fetch_url`) run in the sandbox under their
//!    declared policy, exactly as in the agent demo (see [`crate::sandboxed`]).
//!
//! The audit goes to a JSONL file ([`ServerOptions::audit`]) and, as OpenTelemetry spans, to an
//! OTLP endpoint ([`ServerOptions::otlp`]); both receive the refusals of either layer.
//!
//! What a client sees of the policy is derived from it, never written by hand: the MCP tool
//! annotations come from [`hints`], and each tool's `_meta` holds the policy, its hash and the
//! manifest hash (see [`tool_meta`]). A refused call is a tool error (`isError: true`) whose
//! `_meta` names the denial (see [`DENIAL_KEY`]).
//!
//! ```no_run
//! use rmcp::ServiceExt;
//! use toolpolicy_examples::mcp::{PolicyServer, ServerOptions};
//!
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let server = PolicyServer::new(ServerOptions::default())?;
//! server.serve(rmcp::transport::stdio()).await?.waiting().await?;
//! # Ok(())
//! # }
//! ```

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use policy_macros::tool_policy;
use policy_runtime::audit::{EventSink, JsonlSink};
use policy_runtime::event::{Event, EventKind};
use policy_runtime::macro_support::{manifest_of, registry_of, DeniedReturn};
use policy_runtime::otel::OtelSink;
use policy_runtime::policy::{Stance, ToolPolicy};
use policy_runtime::redact::Redactor;
use policy_runtime::registry::CallStatus;
use policy_runtime::{Denial, Invocation, Registry, ToolCall, ToolSpec};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{IntoCallToolResult, ToolCallContext};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, MetaObject,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools;

/// `_meta` key of a tool: its policy as manifest JSON.
pub const POLICY_KEY: &str = "toolpolicy/policy";
/// `_meta` key of a tool: SHA-256 of its policy's canonical JSON (`ToolPolicy::hash`).
pub const POLICY_HASH_KEY: &str = "toolpolicy/policyHash";
/// `_meta` key of a tool: the hash of the manifest of all the server's tools (`Manifest::hash`),
/// the value every audit event carries.
pub const MANIFEST_HASH_KEY: &str = "toolpolicy/manifestHash";
/// `_meta` key of a refused call's result: the [`Denial`] (code, reason, argument, path) and
/// `layer`, `"mcp"` for the method's own `#[tool_policy]` gate, `"registry"` for the session's
/// gate and constraints.
pub const DENIAL_KEY: &str = "toolpolicy/denial";
/// `_meta` key of a call's result: the tool's audit metadata (for subprocess tools, what the
/// sandbox enforced and every egress attempt, also when the subprocess failed).
pub const AUDIT_KEY: &str = "toolpolicy/audit";

/// The MCP tool annotations a policy warrants.
///
/// The hints describe what the declared policy lets the tool do, which is what the gate and the
/// sandbox hold it to; unspecified parts take the sandbox's meaning (`policy-runtime/docs/policy.md`: `net` deny,
/// `exec` allow, `fs.write` a private scratch directory only):
///
/// * `readOnlyHint`: no `fs.write` glob is declared and `exec` is not `allow` (an arbitrary
///   program started by an in-process tool is outside every gate, so nothing can be promised).
///   The network does not count here: as in the MCP specification's web-search example, talking
///   to the outside is what `openWorldHint` says.
/// * `destructiveHint` and `idempotentHint`: set only on a tool that is not read-only, the only
///   case in which the MCP specification gives them a meaning. `destructiveHint` is `true`: a
///   declared `fs.write` glob admits overwriting and deleting, not only adding. `idempotentHint`
///   is `false`: a write or a started program may have effects that repeat, and the policy
///   cannot tell which.
/// * `openWorldHint`: `net` is `allow` or a non-empty host list.
///
/// A forbidden tool never runs: it is read-only and closed-world.
///
/// ```
/// use policy_runtime::policy::ToolPolicy;
/// use toolpolicy_examples::mcp::hints;
///
/// let policy = ToolPolicy::from_json_str("p", r#"{"fs": {"write": ["/out/**"]}, "net": "deny", "exec": "deny"}"#)?;
/// let h = hints(&policy);
/// assert_eq!((h.read_only_hint, h.destructive_hint, h.idempotent_hint, h.open_world_hint),
///            (Some(false), Some(true), Some(false), Some(false)));
///
/// let fetch = ToolPolicy::from_json_str("p", r#"{"net": {"hosts": ["api.example.com:443"]}, "exec": {"allow": ["curl"]}}"#)?;
/// let h = hints(&fetch);
/// assert_eq!((h.read_only_hint, h.destructive_hint, h.idempotent_hint, h.open_world_hint),
///            (Some(true), None, None, Some(true)));
/// # Ok::<(), policy_runtime::LoadError>(())
/// ```
pub fn hints(policy: &ToolPolicy) -> ToolAnnotations {
    let forbidden = policy.constraints.forbidden == Some(true);
    let writes = policy.fs.write.as_ref().is_some_and(|w| !w.is_empty());
    let any_program = matches!(policy.exec_stance(), Stance::Anything);
    let open_world = !matches!(policy.net_stance(), Stance::Nothing);
    let read_only = forbidden || !(writes || any_program);
    let open_world = open_world && !forbidden;
    let hints = ToolAnnotations::new()
        .read_only(read_only)
        .open_world(open_world);
    if read_only {
        hints
    } else {
        hints.destructive(true).idempotent(false)
    }
}

/// The `_meta` object of a tool: its policy ([`POLICY_KEY`]), the policy's hash
/// ([`POLICY_HASH_KEY`]) and the manifest hash of the whole server ([`MANIFEST_HASH_KEY`]).
pub fn tool_meta(spec: &ToolSpec, manifest_hash: &str) -> MetaObject {
    let mut meta = JsonObject::new();
    meta.insert(
        POLICY_KEY.into(),
        serde_json::to_value(&spec.policy).unwrap_or(Value::Null),
    );
    meta.insert(POLICY_HASH_KEY.into(), spec.policy.hash().into());
    meta.insert(MANIFEST_HASH_KEY.into(), manifest_hash.into());
    MetaObject(meta)
}

/// How a server is set up.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// Append every call's audit events (proposed, denied, executed, failed) to this JSONL file.
    pub audit: Option<PathBuf>,
    /// Also send every call, as an OpenTelemetry `execute_tool` span, to this OTLP/HTTP
    /// endpoint (e.g. `http://localhost:4318/v1/traces`); see [`policy_runtime::otel`].
    pub otlp: Option<String>,
}

/// The arguments of `list_dir` and `read_file`.
#[derive(Debug, Serialize, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct PathArgs {
    /// An absolute path under /tmp/toolpolicy-demo/data.
    pub path: String,
}

/// The arguments of `write_report`.
#[derive(Debug, Serialize, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ReportArgs {
    /// An absolute path under /tmp/toolpolicy-demo/out.
    pub path: String,
    /// The Markdown text.
    pub body: String,
}

/// The arguments of `grep`.
#[derive(Debug, Serialize, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct GrepArgs {
    /// The pattern (a basic regular expression).
    pub pattern: String,
    /// A file or directory under /tmp/toolpolicy-demo/data.
    pub path: String,
}

/// The arguments of `run_tests`.
#[derive(Debug, Serialize, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SuiteArgs {
    /// The suite: `unit` or `e2e`.
    pub suite: String,
}

/// The arguments of `run_shell`.
#[derive(Debug, Serialize, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ShellArgs {
    /// The command line, run as `sh -c COMMAND` in the project.
    pub command: String,
}

/// The arguments of `fetch_url`.
#[derive(Debug, Serialize, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct UrlArgs {
    /// An http:// or https:// URL of the status API.
    pub url: String,
}

/// What a tool method answers: an MCP result.
///
/// It exists so a refusal of the `#[tool_policy]` gate keeps its [`Denial`] (which reaches the
/// client's `_meta` and the audit log) instead of becoming bare text.
#[derive(Debug)]
pub struct Reply(CallToolResult);

impl Reply {
    /// The MCP result.
    pub fn into_result(self) -> CallToolResult {
        self.0
    }
}

impl DeniedReturn for Reply {
    fn denied(tool: &str, denial: Denial) -> Self {
        Reply(refusal(tool, &denial, "mcp"))
    }
}

impl IntoCallToolResult for Reply {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        Ok(self.0.into())
    }
}

fn refusal(tool: &str, denial: &Denial, layer: &str) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(denial.to_model_text(tool))]);
    let mut detail = serde_json::to_value(denial).unwrap_or(Value::Null);
    detail["layer"] = layer.into();
    let mut meta = JsonObject::new();
    meta.insert(DENIAL_KEY.into(), detail);
    result.meta = Some(MetaObject(meta));
    result
}

fn audit_meta(report: Value) -> MetaObject {
    let mut meta = JsonObject::new();
    meta.insert(AUDIT_KEY.into(), report);
    MetaObject(meta)
}

/// One MCP session: its agent invocation (constraint counters live here) and its call numbers.
struct Session {
    registry: &'static Registry,
    invocation: Mutex<Invocation<'static>>,
    /// The invocation's id, readable while a long call holds the lock.
    invocation_id: String,
    next_call: AtomicU64,
    audit: Option<Arc<JsonlSink>>,
    spans: Option<Arc<OtelSink>>,
    redactor: Redactor,
}

impl Session {
    fn call_id(&self) -> String {
        format!("mcp-{}", self.next_call.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Runs a call through the registry on a blocking thread: the sandboxed tools wait for a
    /// subprocess, which must not stall the runtime's workers.
    async fn run(self: &Arc<Self>, tool: &str, arguments: impl Serialize) -> Reply {
        let call = ToolCall {
            id: Some(self.call_id()),
            name: tool.to_string(),
            arguments: serde_json::to_value(arguments).unwrap_or(Value::Null),
        };
        let session = self.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let mut invocation = session
                .invocation
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            // A failed sandboxed run gives the registry no metadata; its report is kept aside.
            let _ = crate::sandboxed::take_last_report();
            let result = invocation.call_blocking(call);
            let report = match result.status {
                CallStatus::Error(_) => crate::sandboxed::take_last_report(),
                _ => None,
            };
            (result, report)
        })
        .await;
        let (result, failed_run) = match joined {
            Ok(done) => done,
            Err(e) => {
                return Reply(CallToolResult::error(vec![ContentBlock::text(format!(
                    "`{tool}` stopped unexpectedly: {e}"
                ))]))
            }
        };
        Reply(match &result.status {
            CallStatus::Denied(denial) => refusal(tool, denial, "registry"),
            CallStatus::Ok => {
                let mut ok = CallToolResult::success(vec![ContentBlock::text(result.content)]);
                ok.meta = result.metadata.map(audit_meta);
                ok
            }
            CallStatus::Error(_) => {
                let mut failed = CallToolResult::error(vec![ContentBlock::text(result.content)]);
                failed.meta = failed_run.map(audit_meta);
                failed
            }
        })
    }

    /// Writes the events of a call the method's own gate refused, which the registry never saw,
    /// in the registry's shape (proposed, then denied), so the audit log misses no refusal.
    fn record_gate_refusal(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        result: &CallToolResult,
    ) {
        let sinks: Vec<&dyn EventSink> = [
            self.audit.as_deref().map(|s| s as &dyn EventSink),
            self.spans.as_deref().map(|s| s as &dyn EventSink),
        ]
        .into_iter()
        .flatten()
        .collect();
        if sinks.is_empty() {
            return;
        }
        let Some(detail) = result.meta.as_ref().and_then(|m| m.0.get(DENIAL_KEY)) else {
            return;
        };
        if detail["layer"] != "mcp" {
            return;
        }
        let Ok(denial) = serde_json::from_value::<Denial>(detail.clone()) else {
            return;
        };
        let call_id = self.call_id();
        let hash = self.registry.manifest_hash();
        let arguments = Value::Object(arguments.unwrap_or_default());
        let event = |kind| Event::new(&self.invocation_id, &call_id, tool, hash, kind);
        let proposed = event(EventKind::Proposed {
            arguments: self.redactor.redact_json(&arguments),
        });
        let denied = event(EventKind::Denied {
            code: denial.code,
            reason: denial.reason,
            argument: denial.argument,
            path: denial.path,
        });
        for sink in sinks {
            sink.record(&proposed);
            sink.record(&denied);
        }
    }
}

/// The MCP server of the agent's seven tools. One value serves one MCP session (over stdio, one
/// per process): its constraint counters and audit invocation id belong to that session.
#[derive(Clone)]
pub struct PolicyServer {
    tool_router: ToolRouter<Self>,
    session: Arc<Session>,
}

#[tool_router]
impl PolicyServer {
    /// List the entries of a directory under the data folder.
    #[tool_policy(policy(fs.read = ["/tmp/toolpolicy-demo/data/**"], net = deny, exec = deny, risk = low),
                  paths(path = read))]
    #[tool(title = "List a data directory")]
    async fn list_dir(&self, Parameters(args): Parameters<PathArgs>) -> Reply {
        self.session.run("list_dir", args).await
    }

    /// Read a UTF-8 text file under the data folder.
    #[tool_policy(policy(fs.read = ["/tmp/toolpolicy-demo/data/**"], net = deny, exec = deny, risk = low),
                  paths(path = read))]
    #[tool(title = "Read a data file")]
    async fn read_file(&self, Parameters(args): Parameters<PathArgs>) -> Reply {
        self.session.run("read_file", args).await
    }

    /// Write a Markdown report under the out folder. At most twice per session, and only after
    /// `read_file` has succeeded.
    #[tool_policy(policy(fs.write = ["/tmp/toolpolicy-demo/out/**"], net = deny, exec = deny, risk = medium),
                  constraints(max_invocations = 2, only_after = [read_file]),
                  paths(path = write))]
    #[tool(title = "Write a report")]
    async fn write_report(&self, Parameters(args): Parameters<ReportArgs>) -> Reply {
        self.session.run("write_report", args).await
    }

    /// Search files under the data folder for a pattern (runs `grep` in the sandbox).
    #[tool_policy(policy(fs.read = ["/tmp/toolpolicy-demo/data/**"], net = deny, exec = ["grep"], env = deny, risk = low),
                  limits(timeout_ms = 5000, max_output_bytes = 65536, max_processes = 8, memory_bytes = 1073741824),
                  paths(path = read))]
    #[tool(title = "Search the data")]
    async fn grep(&self, Parameters(args): Parameters<GrepArgs>) -> Reply {
        self.session.run("grep", args).await
    }

    /// Run the project's test suite (`unit` or `e2e`) with its own `run-tests.sh`, in the sandbox.
    #[tool_policy(policy(fs.read = ["/tmp/toolpolicy-demo/project/**"], fs.write = ["/tmp/toolpolicy-demo/project/target/**"],
                         net = deny, exec = ["/bin/sh", "sed", "head", "cat", "curl"], env = ["HOME", "PATH", "LANG"], risk = medium),
                  limits(timeout_ms = 20000, max_output_bytes = 65536, max_processes = 32, memory_bytes = 1073741824, cpu_seconds = 10))]
    #[tool(title = "Run the test suite")]
    async fn run_tests(&self, Parameters(args): Parameters<SuiteArgs>) -> Reply {
        self.session.run("run_tests", args).await
    }

    /// Run a shell command in the project (`sh -c COMMAND` in the sandbox), judged first by
    /// its command policy.
    #[tool_policy(policy(fs.read = ["/tmp/toolpolicy-demo/project/**"], fs.write = ["/tmp/toolpolicy-demo/project/target/**"],
                         net = deny, exec = ["/bin/sh", "make"], env = ["HOME", "PATH", "LANG"], risk = medium),
                  commands(max_level = 2, deny_args(git = ["--no-verify"]), chains = true),
                  limits(timeout_ms = 20000, max_output_bytes = 65536, max_processes = 32, memory_bytes = 1073741824, cpu_seconds = 10))]
    #[tool(title = "Run a shell command")]
    async fn run_shell(&self, Parameters(args): Parameters<ShellArgs>) -> Reply {
        self.session.run("run_shell", args).await
    }

    /// Fetch a URL from the status API (runs `curl` in the sandbox; only the API is reachable).
    #[tool_policy(policy(net = ["api.example.com:8080"], exec = ["curl"], env = deny, risk = medium),
                  limits(timeout_ms = 10000, max_output_bytes = 1048576, max_processes = 8, memory_bytes = 1073741824))]
    #[tool(title = "Fetch from the status API")]
    async fn fetch_url(&self, Parameters(args): Parameters<UrlArgs>) -> Reply {
        self.session.run("fetch_url", args).await
    }
}

impl PolicyServer {
    /// The policy specs of the served tools, as `#[tool_policy]` declared them.
    pub fn tool_specs() -> Vec<&'static ToolSpec> {
        vec![
            Self::list_dir_tool_spec(),
            Self::read_file_tool_spec(),
            Self::write_report_tool_spec(),
            Self::grep_tool_spec(),
            Self::run_tests_tool_spec(),
            Self::run_shell_tool_spec(),
            Self::fetch_url_tool_spec(),
        ]
    }

    /// A server for one MCP session.
    ///
    /// Fails when the audit log cannot be opened, or when a tool's `#[tool_policy]` differs from
    /// the policy of the function in [`crate::tools`] that runs it (the client would be shown
    /// one policy and held to another).
    pub fn new(options: ServerOptions) -> Result<PolicyServer, String> {
        let specs = Self::tool_specs();
        let mut registry = registry_of(tools::all()).map_err(|e| e.to_string())?;
        for spec in &specs {
            let runs = registry.get(&spec.name).map(|t| &t.spec().policy);
            if runs != Some(&spec.policy) {
                return Err(format!(
                    "the MCP tool `{}` declares a policy that differs from the one of crate::tools::{} (or that function is missing)",
                    spec.name, spec.name
                ));
            }
        }
        let audit = match &options.audit {
            Some(path) => {
                let sink = Arc::new(
                    JsonlSink::open(path)
                        .map_err(|e| format!("opening the audit log {}: {e}", path.display()))?,
                );
                registry.add_sink(sink.clone());
                Some(sink)
            }
            None => None,
        };
        let spans = match &options.otlp {
            Some(endpoint) => {
                let sink = Arc::new(
                    OtelSink::otlp_http(endpoint, "toolpolicy-mcp-server", &registry.manifest())
                        .map_err(|e| e.to_string())?,
                );
                registry.add_sink(sink.clone());
                Some(sink)
            }
            None => None,
        };
        let manifest_hash = manifest_of(specs.iter().copied()).hash();
        let mut tool_router = Self::tool_router();
        for spec in &specs {
            let route = tool_router
                .map
                .get_mut(spec.name.as_str())
                .ok_or_else(|| format!("no MCP route for the tool `{}`", spec.name))?;
            // What the client reads as the description must be what the manifest says.
            if route.attr.description.as_deref() != Some(spec.description.as_str()) {
                return Err(format!(
                    "the MCP tool `{}` is described to clients as {:?}, but its `#[tool_policy]` says {:?}",
                    spec.name, route.attr.description, spec.description
                ));
            }
            route.attr.annotations = Some(hints(&spec.policy));
            route.attr.meta = Some(tool_meta(spec, &manifest_hash));
        }
        // The session's invocation borrows the registry for the life of the server, which is
        // the life of the process for the stdio binary.
        let registry: &'static Registry = Box::leak(Box::new(registry));
        let invocation = registry.start_invocation();
        Ok(PolicyServer {
            tool_router,
            session: Arc::new(Session {
                registry,
                invocation_id: invocation.id().to_string(),
                invocation: Mutex::new(invocation),
                next_call: AtomicU64::new(0),
                audit,
                spans,
                redactor: Redactor::new(),
            }),
        })
    }

    /// The hash of the manifest of the served tools.
    pub fn manifest_hash(&self) -> &str {
        self.session.registry.manifest_hash()
    }

    /// Ends the session's audit: exports the spans not yet sent (when `otlp` is set) and
    /// reports the audit log's first write error or the failed export, if any.
    pub fn finish_audit(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        if let Some(spans) = &self.session.spans {
            if let Err(e) = spans.shutdown() {
                problems.push(e.to_string());
            }
        }
        if let Some(e) = self.session.audit.as_ref().and_then(|s| s.take_error()) {
            problems.push(format!("writing the audit log: {e}"));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

#[tool_handler(router = self.tool_router, name = "toolpolicy-mcp-server",
               instructions = "The tools of a small coding agent. Every call is judged against the tool's declared policy (in the tool's _meta); subprocess tools run in a sandbox. A refused call is a tool error that says why.")]
impl ServerHandler for PolicyServer {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let arguments = request.arguments.clone();
        let response = self
            .tool_router
            .call(ToolCallContext::new(self, request, context))
            .await?;
        if let CallToolResponse::Complete(result) = &response {
            self.session.record_gate_refusal(&tool, arguments, result);
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_policies_are_the_policies_that_run() {
        let server = PolicyServer::new(ServerOptions::default()).unwrap();
        let registry = registry_of(tools::all()).unwrap();
        assert_eq!(server.manifest_hash(), registry.manifest_hash());
        assert_eq!(
            manifest_of(PolicyServer::tool_specs()).hash(),
            registry.manifest_hash()
        );
    }

    #[test]
    fn hints_follow_the_policy() {
        let h = |text: &str| hints(&ToolPolicy::from_json_str("p", text).unwrap());
        let read = h(r#"{"fs": {"read": ["/d/**"]}, "net": "deny", "exec": "deny"}"#);
        assert_eq!(read.read_only_hint, Some(true));
        // Meaningless for a read-only tool, so left out.
        assert_eq!((read.destructive_hint, read.idempotent_hint), (None, None));
        assert_eq!(read.open_world_hint, Some(false));
        // Unspecified exec is `allow` in the sandbox: nothing can be promised.
        let shell = h(r#"{"fs": {"read": ["/d/**"]}}"#);
        assert_eq!(shell.read_only_hint, Some(false));
        assert_eq!(shell.destructive_hint, Some(true));
        assert_eq!(shell.idempotent_hint, Some(false));
        let empty_write = h(r#"{"fs": {"write": []}, "exec": "deny"}"#);
        assert_eq!(empty_write.read_only_hint, Some(true));
        let net = h(r#"{"net": "allow", "exec": "deny"}"#);
        assert_eq!(net.open_world_hint, Some(true));
        assert_eq!(net.idempotent_hint, None);
        let no_hosts = h(r#"{"net": {"hosts": []}, "exec": "deny"}"#);
        assert_eq!(no_hosts.open_world_hint, Some(false));
        let forbidden =
            h(r#"{"exec": "allow", "net": "allow", "constraints": {"forbidden": true}}"#);
        assert_eq!(forbidden.read_only_hint, Some(true));
        assert_eq!(forbidden.open_world_hint, Some(false));
    }
}
