//! Audit events: one per step of a call's life.
//!
//! Every event carries the manifest hash, so an audit line can always be tied to the exact
//! policy that was in force.
//!
//! ```
//! use policy_runtime::event::{Event, EventKind};
//! let e = Event::new("inv-1", "call-1", "fetch", "abc123", EventKind::Approved { approver: "ops".into() });
//! let line = serde_json::to_string(&e)?;
//! assert!(line.contains(r#""event":"approved""#));
//! assert!(line.contains(r#""manifest_hash":"abc123""#));
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::denial::DenialCode;

/// One audit event.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    /// Milliseconds since the Unix epoch.
    pub ts_ms: u64,
    /// The agent invocation.
    pub invocation: String,
    /// The call within it.
    pub call_id: String,
    /// The tool's name (as the model gave it, for unknown tools).
    pub tool: String,
    /// Hash of the manifest in force ([`crate::manifest::Manifest::hash`]).
    pub manifest_hash: String,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    /// An event stamped with the current time.
    pub fn new(
        invocation: impl Into<String>,
        call_id: impl Into<String>,
        tool: impl Into<String>,
        manifest_hash: impl Into<String>,
        kind: EventKind,
    ) -> Event {
        Event {
            ts_ms: now_ms(),
            invocation: invocation.into(),
            call_id: call_id.into(),
            tool: tool.into(),
            manifest_hash: manifest_hash.into(),
            kind,
        }
    }
}

/// What happened to a call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// The model proposed the call (arguments with secrets redacted).
    Proposed {
        /// Redacted arguments.
        arguments: Value,
    },
    /// The call was refused before its body ran.
    Denied {
        /// Stable reason code.
        code: DenialCode,
        /// Explanation.
        reason: String,
        /// The argument at fault.
        #[serde(skip_serializing_if = "Option::is_none")]
        argument: Option<String>,
        /// The path at fault.
        #[serde(skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// An approval hook said yes.
    Approved {
        /// Who approved (the hook's name).
        approver: String,
    },
    /// The body ran and returned output.
    Executed {
        /// Wall-clock duration of the body.
        duration_us: u64,
        /// Bytes of output text.
        output_bytes: usize,
        /// The tool's audit metadata (e.g. the sandbox's enforcement report).
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    /// The body ran and returned an error.
    Failed {
        /// Wall-clock duration of the body.
        duration_us: u64,
        /// `invalid_arguments`, `failed` or `refused`.
        kind: crate::tool::ToolErrorKind,
        /// The error, redacted.
        error: String,
    },
}

impl EventKind {
    /// The event's name as written in the `event` field.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Proposed { .. } => "proposed",
            EventKind::Denied { .. } => "denied",
            EventKind::Approved { .. } => "approved",
            EventKind::Executed { .. } => "executed",
            EventKind::Failed { .. } => "failed",
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
