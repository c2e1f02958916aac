//! Approval hooks: a human or a rule says yes or no before a risky call runs.
//!
//! A call needs approval when its policy says `requires_approval = true`, when its risk is at
//! or above the registry's threshold, or when its command line needs it (its level is at or
//! above the command policy's `approve_from`, or it sends a file to the network). With no approver configured such a call is denied: the
//! runtime fails closed.
//!
//! ```
//! use policy_runtime::approval::{Approval, ApprovalRequest, Approver};
//!
//! struct OnlyReads;
//! impl Approver for OnlyReads {
//!     fn name(&self) -> &str { "only-reads" }
//!     fn decide(&self, request: &ApprovalRequest<'_>) -> Approval {
//!         if request.tool.starts_with("read") { Approval::Approve } else { Approval::Deny("writes need a human".into()) }
//!     }
//! }
//! ```

use serde_json::Value;

use crate::command::Level;
use crate::policy::Risk;

/// Why a call is asking for approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApprovalReason {
    /// The policy says `requires_approval = true`.
    Required,
    /// The tool's risk is at or above the registry's threshold.
    Risk(Risk),
    /// The command line's level is at or above the command policy's `approve_from`, or it
    /// sends a file to the network (see [`crate::command`]).
    Command(Level),
}

/// What the approver sees.
#[derive(Clone, Debug)]
pub struct ApprovalRequest<'a> {
    /// The tool.
    pub tool: &'a str,
    /// The arguments, after the gate, with secrets redacted.
    pub arguments: &'a Value,
    /// The tool's effective risk.
    pub risk: Risk,
    /// Why approval is needed.
    pub reason: ApprovalReason,
}

/// An approver's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Run it.
    Approve,
    /// Do not run it; the text is shown to the model.
    Deny(String),
}

/// Decides approval requests.
pub trait Approver: Send + Sync {
    /// A name for audit events.
    fn name(&self) -> &str;
    /// The decision.
    fn decide(&self, request: &ApprovalRequest<'_>) -> Approval;
}
