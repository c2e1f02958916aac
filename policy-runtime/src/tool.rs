//! What a tool is to the runtime: a [`ToolSpec`] (name, description, policy, which arguments
//! are paths) and a body that takes JSON arguments.
//!
//! The `#[tool]` attribute generates [`Tool`] implementations; closures work too:
//!
//! ```
//! use policy_runtime::tool::{fn_tool, Access, ToolSpec};
//! use policy_runtime::policy::ToolPolicy;
//!
//! let policy = ToolPolicy::from_json_str("inline", r#"{"fs": {"read": ["/data/**"]}}"#)?;
//! let spec = ToolSpec::new("read_file", policy)
//!     .description("Read a UTF-8 file.")
//!     .path_arg("path", Access::Read);
//! let tool = fn_tool(spec, |_ctx, args| {
//!     let path = args["path"].as_str().unwrap_or_default();
//!     Ok(format!("would read {path}").into())
//! });
//! # let _ = tool;
//! # Ok::<(), policy_runtime::LoadError>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::command::{CommandArg, CommandForm};
use crate::manifest::SourceLocation;
use crate::policy::ToolPolicy;
use crate::role::Role;

/// Why a string cannot name a tool.
///
/// A tool name is what the model writes to call the tool, a manifest key and an audit field:
/// it is non-empty and made of ASCII letters, digits, `_` and `-`. The registry, the manifest
/// loader and the `#[tool]` attribute all ask [`check_tool_name`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolNameError {
    /// `""`.
    #[error("a tool name cannot be empty")]
    Empty,
    /// A control character, e.g. a newline that would forge a line of a log.
    #[error("a tool name cannot contain a control character (found U+{:04X})", u32::from(*.0))]
    Control(char),
    /// Any other character outside the alphabet.
    #[error("a tool name may contain only letters, digits, `_` and `-` (found {0:?})")]
    Invalid(char),
}

/// Checks that `name` can name a tool.
///
/// ```
/// use policy_runtime::tool::{check_tool_name, ToolNameError};
///
/// assert_eq!(check_tool_name("read_file"), Ok(()));
/// assert_eq!(check_tool_name(""), Err(ToolNameError::Empty));
/// assert_eq!(check_tool_name("a\nb"), Err(ToolNameError::Control('\n')));
/// assert_eq!(check_tool_name("a.b"), Err(ToolNameError::Invalid('.')));
/// ```
pub fn check_tool_name(name: &str) -> Result<(), ToolNameError> {
    if name.is_empty() {
        return Err(ToolNameError::Empty);
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(ToolNameError::Control(c));
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        Some(c) => Err(ToolNameError::Invalid(c)),
        None => Ok(()),
    }
}

/// How a path argument is used, which decides the globs it is judged against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Read: judged against `fs.read ∪ fs.write`.
    Read,
    /// Created, modified or deleted: judged against `fs.write` only.
    Write,
    /// Direction not known: judged against `fs.read ∪ fs.write`.
    Unknown,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Unknown => "access",
        })
    }
}

/// A top-level argument that carries a path (or a list of paths) and how it is used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathArg {
    /// The argument's key in the JSON arguments object.
    pub name: String,
    /// Read or write.
    pub access: Access,
}

/// Everything the runtime knows about a tool without calling it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// Unique name, as the model calls it.
    pub name: String,
    /// What the tool does, for the model (from the doc comment under the macro).
    pub description: String,
    /// The declared policy.
    pub policy: ToolPolicy,
    /// Typed path arguments; every other argument is searched for path-like strings.
    pub path_args: Vec<PathArg>,
    /// Roles of arguments that are not typed path arguments: other path types (`any`) and URLs
    /// (`url`). With `path_args`, they are the manifest's `"args"` ([`ToolSpec::arg_roles`]).
    pub roles: BTreeMap<String, Role>,
    /// Arguments that carry a command line, judged by the policy's
    /// [command policy](crate::command) before the body runs.
    pub command_args: Vec<CommandArg>,
    /// Where the tool is declared.
    pub source: Option<SourceLocation>,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
}

impl ToolSpec {
    /// A spec with no description, no typed path arguments and an open object schema.
    pub fn new(name: impl Into<String>, policy: ToolPolicy) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            policy,
            path_args: Vec::new(),
            roles: BTreeMap::new(),
            command_args: Vec::new(),
            source: None,
            input_schema: serde_json::json!({"type": "object"}),
        }
    }

    /// Sets the description.
    pub fn description(mut self, text: impl Into<String>) -> ToolSpec {
        self.description = text.into();
        self
    }

    /// Declares a typed path argument.
    pub fn path_arg(mut self, name: impl Into<String>, access: Access) -> ToolSpec {
        self.path_args.push(PathArg {
            name: name.into(),
            access,
        });
        self
    }

    /// Records the role of an argument that is not a typed path argument (a `PathBuf` is
    /// [`Role::Any`], a URL [`Role::Url`]), for the manifest.
    pub fn arg_role(mut self, name: impl Into<String>, role: Role) -> ToolSpec {
        self.roles.insert(name.into(), role);
        self
    }

    /// Every path and URL argument's role, as the manifest records it: the typed path
    /// arguments' (`read`, `write`, `any`) and [`ToolSpec::roles`].
    ///
    /// ```
    /// use policy_runtime::policy::ToolPolicy;
    /// use policy_runtime::role::Role;
    /// use policy_runtime::tool::{Access, ToolSpec};
    ///
    /// let spec = ToolSpec::new("t", ToolPolicy::default())
    ///     .path_arg("dest", Access::Write)
    ///     .arg_role("endpoint", Role::Url);
    /// let roles = spec.arg_roles();
    /// assert_eq!(roles["dest"], Role::Write);
    /// assert_eq!(roles["endpoint"], Role::Url);
    /// ```
    pub fn arg_roles(&self) -> BTreeMap<String, Role> {
        let mut roles = self.roles.clone();
        for arg in &self.path_args {
            roles.insert(arg.name.clone(), Role::of_access(arg.access));
        }
        roles
    }

    /// Declares an argument that carries the command the tool runs: a shell string or an
    /// argv. With a command policy declared, every call's command is judged before the body
    /// runs; a tool with a command policy and no command argument is denied every call.
    ///
    /// ```
    /// use policy_runtime::command::CommandForm;
    /// use policy_runtime::policy::ToolPolicy;
    /// use policy_runtime::tool::ToolSpec;
    ///
    /// let policy = ToolPolicy::from_json_str("p", r#"{"exec": {"allow": ["sh"]}, "commands": {"max_level": 1}}"#)?;
    /// let spec = ToolSpec::new("run_shell", policy).command_arg("command", CommandForm::Shell);
    /// assert_eq!(spec.command_args[0].name, "command");
    /// # Ok::<(), policy_runtime::LoadError>(())
    /// ```
    pub fn command_arg(mut self, name: impl Into<String>, form: CommandForm) -> ToolSpec {
        self.command_args.push(CommandArg {
            name: name.into(),
            form,
        });
        self
    }

    /// Sets the source location.
    pub fn source(mut self, file: impl Into<String>, line: u32) -> ToolSpec {
        self.source = Some(SourceLocation {
            file: file.into(),
            line,
        });
        self
    }

    /// Sets the JSON Schema of the arguments.
    pub fn input_schema(mut self, schema: Value) -> ToolSpec {
        self.input_schema = schema;
        self
    }

    /// Every cross-field conflict of the spec's policy for this tool ([`ToolPolicy::conflicts`]
    /// with the spec's name, so `only_after` naming the tool itself is one). The registry
    /// refuses a spec that has any.
    ///
    /// ```
    /// use policy_runtime::conflict::Conflict;
    /// use policy_runtime::policy::ToolPolicy;
    /// use policy_runtime::tool::ToolSpec;
    ///
    /// let mut policy = ToolPolicy::default();
    /// policy.constraints.forbidden = Some(true);
    /// policy.constraints.requires_approval = Some(true);
    /// let spec = ToolSpec::new("wipe", policy);
    /// assert_eq!(spec.conflicts(), [Conflict::ContradictsForbidden { key: "requires_approval" }]);
    /// ```
    pub fn conflicts(&self) -> Vec<crate::conflict::Conflict> {
        self.policy.conflicts(Some(&self.name))
    }

    /// How the argument `name` is used, if it is a typed path argument.
    pub fn access_of(&self, name: &str) -> Option<Access> {
        self.path_args
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.access)
    }
}

/// Facts about the current call, passed to the tool body.
#[derive(Clone, Debug)]
pub struct CallContext {
    /// The tool's name.
    pub tool: String,
    /// The call's id (from the model, or generated).
    pub call_id: String,
    /// The agent invocation this call belongs to.
    pub invocation_id: String,
    /// Working directory that relative path arguments were resolved against.
    pub cwd: Option<PathBuf>,
    /// Hash of the manifest in force.
    pub manifest_hash: String,
}

/// What a tool returns to the model.
///
/// ```
/// use policy_runtime::tool::ToolOutput;
/// let out = ToolOutput::from("done").with_metadata(serde_json::json!({"exit": 0}));
/// assert_eq!(out.text, "done");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ToolOutput {
    /// The text the model reads.
    pub text: String,
    /// Structured facts for the audit log (e.g. the sandbox's enforcement report); not shown
    /// to the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl ToolOutput {
    /// Attaches audit metadata.
    pub fn with_metadata(mut self, metadata: Value) -> ToolOutput {
        self.metadata = Some(metadata);
        self
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        ToolOutput {
            text,
            metadata: None,
        }
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        ToolOutput::from(text.to_string())
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        match value {
            Value::String(s) => ToolOutput::from(s),
            other => ToolOutput::from(other.to_string()),
        }
    }
}

impl From<()> for ToolOutput {
    fn from(_: ()) -> Self {
        ToolOutput::from("ok")
    }
}

/// The kinds of [`ToolError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    /// The JSON arguments were missing, of the wrong type, or unknown.
    InvalidArguments,
    /// The tool ran and failed.
    Failed,
    /// The sandbox refused to run the tool (the host cannot enforce its policy).
    Refused,
}

impl ToolErrorKind {
    /// The kind as audit events write it (`invalid_arguments`, `failed`, `refused`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolErrorKind::InvalidArguments => "invalid_arguments",
            ToolErrorKind::Failed => "failed",
            ToolErrorKind::Refused => "refused",
        }
    }
}

/// A tool's failure, shown to the model.
///
/// ```
/// use policy_runtime::tool::{ToolError, ToolErrorKind};
/// let e = ToolError::invalid_arguments("missing field `path`");
/// assert_eq!(e.kind(), ToolErrorKind::InvalidArguments);
/// let io: ToolError = std::io::Error::other("disk full").into();
/// assert_eq!(io.to_string(), "disk full");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    kind: ToolErrorKind,
    message: String,
}

impl ToolError {
    /// A failure of the tool itself.
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            kind: ToolErrorKind::Failed,
            message: message.into(),
        }
    }

    /// Bad arguments from the model.
    pub fn invalid_arguments(message: impl Into<String>) -> ToolError {
        ToolError {
            kind: ToolErrorKind::InvalidArguments,
            message: message.into(),
        }
    }

    /// The sandbox refused to start the tool.
    pub fn refused(message: impl Into<String>) -> ToolError {
        ToolError {
            kind: ToolErrorKind::Refused,
            message: message.into(),
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ToolErrorKind {
        self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError::new(e.to_string())
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::new(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::new(message)
    }
}

/// The future a tool body returns.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;

/// A tool the registry can dispatch.
///
/// The arguments reach [`Tool::call`] only after the gate: typed path arguments have been
/// replaced by their normalized absolute form.
pub trait Tool: Send + Sync {
    /// The tool's spec.
    fn spec(&self) -> &ToolSpec;

    /// Runs the body.
    fn call<'a>(&'a self, ctx: &'a CallContext, args: Value) -> ToolFuture<'a>;
}

/// A [`Tool`] made of a spec and a synchronous closure.
pub struct FnTool<F> {
    spec: ToolSpec,
    body: F,
}

/// Makes a tool from a spec and a synchronous closure.
pub fn fn_tool<F>(spec: ToolSpec, body: F) -> FnTool<F>
where
    F: Fn(&CallContext, Value) -> Result<ToolOutput, ToolError> + Send + Sync,
{
    FnTool { spec, body }
}

impl<F> Tool for FnTool<F>
where
    F: Fn(&CallContext, Value) -> Result<ToolOutput, ToolError> + Send + Sync,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, ctx: &'a CallContext, args: Value) -> ToolFuture<'a> {
        let result = (self.body)(ctx, args);
        Box::pin(std::future::ready(result))
    }
}

/// Deserializes a tool's arguments, turning serde's message into an
/// [`ToolErrorKind::InvalidArguments`] error that names the tool.
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Args { path: String }
/// let err = policy_runtime::tool::parse_args::<Args>("read_file", serde_json::json!({})).err().unwrap();
/// assert!(err.to_string().contains("missing field `path`"));
/// ```
pub fn parse_args<T: serde::de::DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::invalid_arguments(format!("invalid arguments for `{tool}`: {e}")))
}
