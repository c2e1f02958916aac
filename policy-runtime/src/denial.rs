//! Why a call was stopped before its body ran.
//!
//! A [`Denial`] has a stable machine code (for audit and tests) and a reason written for the
//! model, saying what was wrong and what it may do instead, so it can correct itself.
//!
//! ```
//! use policy_runtime::denial::{Denial, DenialCode};
//! let d = Denial::new(DenialCode::MaxInvocations, "`fetch` may run 3 times per invocation");
//! assert_eq!(d.code.as_str(), "constraint.max_invocations");
//! assert!(d.to_model_text("fetch").starts_with("Denied:"));
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

/// Stable reason codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DenialCode {
    /// No tool of that name.
    #[serde(rename = "tool.unknown")]
    UnknownTool,
    /// The arguments are not a JSON object.
    #[serde(rename = "args.invalid")]
    InvalidArguments,
    /// A path argument is outside the globs for its operation.
    #[serde(rename = "fs.path_not_allowed")]
    PathNotAllowed,
    /// A path argument is relative with no working directory, has NUL, or is a bad URL.
    #[serde(rename = "fs.invalid_path")]
    InvalidPath,
    /// A write to a protected path (the agent's own state: see
    /// [`crate::protected`]), which no write glob admits.
    #[serde(rename = "fs.protected_path")]
    ProtectedPath,
    /// A URL argument names an endpoint outside the tool's `net` stance (or is ambiguous).
    #[serde(rename = "net.url_not_allowed")]
    UrlNotAllowed,
    /// A string that starts like an http(s)/ws(s) URL does not parse as one.
    #[serde(rename = "net.invalid_url")]
    InvalidUrl,
    /// The tool is `forbidden`.
    #[serde(rename = "constraint.forbidden")]
    Forbidden,
    /// `max_invocations` is used up.
    #[serde(rename = "constraint.max_invocations")]
    MaxInvocations,
    /// An `only_after` tool has not run yet.
    #[serde(rename = "constraint.only_after")]
    OnlyAfter,
    /// The approval hook said no (or none is configured for a call that needs one).
    #[serde(rename = "approval.denied")]
    ApprovalDenied,
    /// The command is above the tool's command level, always denied, a chain where chains
    /// are not allowed, or has an argument the policy denies.
    #[serde(rename = "command.not_allowed")]
    CommandNotAllowed,
    /// The command has a construct whose effect is only known when it runs (`$(…)`, a
    /// variable, `eval`, a here-document feeding a shell, …).
    #[serde(rename = "command.unjudgeable")]
    CommandUnjudgeable,
}

impl DenialCode {
    /// The code as it appears in audit events.
    pub fn as_str(self) -> &'static str {
        match self {
            DenialCode::UnknownTool => "tool.unknown",
            DenialCode::InvalidArguments => "args.invalid",
            DenialCode::PathNotAllowed => "fs.path_not_allowed",
            DenialCode::InvalidPath => "fs.invalid_path",
            DenialCode::ProtectedPath => "fs.protected_path",
            DenialCode::UrlNotAllowed => "net.url_not_allowed",
            DenialCode::InvalidUrl => "net.invalid_url",
            DenialCode::Forbidden => "constraint.forbidden",
            DenialCode::MaxInvocations => "constraint.max_invocations",
            DenialCode::OnlyAfter => "constraint.only_after",
            DenialCode::ApprovalDenied => "approval.denied",
            DenialCode::CommandNotAllowed => "command.not_allowed",
            DenialCode::CommandUnjudgeable => "command.unjudgeable",
        }
    }
}

impl DenialCode {
    /// The layer of toolpolicy whose check refuses with this code.
    ///
    /// ```
    /// use policy_runtime::denial::{DenialCode, Layer};
    /// assert_eq!(DenialCode::PathNotAllowed.layer(), Layer::PathGate);
    /// assert_eq!(DenialCode::OnlyAfter.layer().as_str(), "constraints");
    /// ```
    pub fn layer(self) -> Layer {
        match self {
            DenialCode::UnknownTool | DenialCode::InvalidArguments => Layer::Registry,
            DenialCode::PathNotAllowed | DenialCode::InvalidPath | DenialCode::ProtectedPath => {
                Layer::PathGate
            }
            DenialCode::UrlNotAllowed | DenialCode::InvalidUrl => Layer::NetGate,
            DenialCode::Forbidden | DenialCode::MaxInvocations | DenialCode::OnlyAfter => {
                Layer::Constraints
            }
            DenialCode::ApprovalDenied => Layer::Approval,
            DenialCode::CommandNotAllowed | DenialCode::CommandUnjudgeable => Layer::CommandPolicy,
        }
    }
}

/// The layers of toolpolicy that can refuse a call, in the order a call meets them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The registry itself: the tool exists and its arguments are a JSON object.
    Registry,
    /// The path gate: every path argument against the policy's globs.
    PathGate,
    /// The URL gate: every URL argument against the policy's `net` stance.
    NetGate,
    /// The command policy of an exec tool: the command line its arguments carry.
    CommandPolicy,
    /// The per-invocation constraints (`forbidden`, `max_invocations`, `only_after`).
    Constraints,
    /// The approval hook.
    Approval,
    /// The OS sandbox, which refuses to start a tool whose policy the host cannot enforce.
    Sandbox,
}

impl Layer {
    /// The layer's name in audit records (`path_gate`, `constraints`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Registry => "registry",
            Layer::PathGate => "path_gate",
            Layer::NetGate => "net_gate",
            Layer::CommandPolicy => "command_policy",
            Layer::Constraints => "constraints",
            Layer::Approval => "approval",
            Layer::Sandbox => "sandbox",
        }
    }
}

impl fmt::Display for DenialCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal to run a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    /// Stable code.
    pub code: DenialCode,
    /// What was wrong and what to do instead.
    pub reason: String,
    /// The argument at fault (a JSON pointer such as `/paths/1`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<String>,
    /// The normalized path (or URL) at fault, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl Denial {
    /// A denial with no argument or path.
    pub fn new(code: DenialCode, reason: impl Into<String>) -> Denial {
        Denial {
            code,
            reason: reason.into(),
            argument: None,
            path: None,
        }
    }

    /// A denial of the argument at `pointer` (a JSON pointer; empty when the value judged is
    /// not part of a call's arguments): the reason names the argument first, so the model
    /// knows which one to change. `pointer` is written out here, only when a call is denied.
    pub(crate) fn of_argument(
        code: DenialCode,
        pointer: &dyn std::fmt::Display,
        reason: String,
        path: Option<String>,
    ) -> Denial {
        let pointer = pointer.to_string();
        if pointer.is_empty() {
            return Denial {
                path,
                ..Denial::new(code, reason)
            };
        }
        Denial {
            code,
            reason: format!("Argument `{pointer}`: {reason}"),
            argument: Some(pointer),
            path,
        }
    }

    /// The text returned to the model in place of the tool's output.
    pub fn to_model_text(&self, tool: &str) -> String {
        format!("Denied: `{tool}` was not run. {}", self.reason)
    }
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.reason)
    }
}

impl std::error::Error for Denial {}
