//! # policy-runtime
//!
//! The policy model, manifests, the in-process path gate, invocation constraints, approval and
//! audit for the tools of an AI agent. Everything else in toolpolicy (the attribute macro, the
//! verifier, the sandbox) reuses the model and the glob dialect defined here.
//!
//! This crate is OS-agnostic: it never confines a process. The sandbox crate does that.
//!
//! What a declaration means is decided here, once, for every consumer: the effective stance of
//! `net`, `exec` and `env` ([`policy::Stance`]), the cross-field rules ([`conflict`]) and what
//! an OS sandbox grants for a glob ([`os_grant`]).
//!
//! A call flows through [`registry::Invocation::call`]: the [`gate`] judges every path argument
//! (lexically normalized, matched by operation) and every URL argument ([`net`]), then the per-invocation [`policy::Constraints`],
//! then the [`approval`] hook, then the tool body; each step is an [`event::Event`] for the
//! [`audit`] sinks, with secrets [`redact`]ed.
//!
//! The capability lint that reads tool bodies (its catalog, its syntax helpers) lives in the
//! `policy-analysis` crate, so that this crate stays free of syn.
//!
//! The [reference](mod@reference) (the Markdown pages of `policy-runtime/docs/`) is the contract every crate
//! follows: the policy model, the glob dialect, the manifest format, the finding codes and the
//! command lines.
//! With the `http` feature, `http::PolicyClient` is an HTTP client that reaches only the
//! endpoints a tool's `net` declares (redirects and DNS included).
//! With the `otel` feature, `otel` sends the audit to OpenTelemetry: one `execute_tool` span per
//! call, exported over OTLP.

pub mod approval;
pub mod args;
pub mod audit;
pub mod beneath;
pub mod command;
pub mod conflict;
pub mod denial;
pub mod diagnostics;
pub mod error;
pub mod event;
pub mod gate;
pub mod glob;
pub mod host;
#[cfg(feature = "http")]
pub mod http;
pub mod macro_support;
pub mod manifest;
pub mod net;
mod objects;
pub mod os_grant;
#[cfg(feature = "otel")]
pub mod otel;
pub mod path;
pub mod policy;
pub mod protected;
pub mod redact;
// The pages link to each other as `[text][page.md]`, with definitions at their end that a
// Markdown viewer follows; these definitions come first in rustdoc, so they win (CommonMark
// takes the first of two definitions) and point at the modules instead.
macro_rules! links {
    () => {
        "\n\n[policy.md]: crate::reference::policy\n\
         [policy.md#the-in-process-gate]: crate::reference::policy#the-in-process-gate\n\
         [policy.md#protected-paths]: crate::reference::policy#protected-paths\n\
         [globs.md]: crate::reference::globs\n\
         [globs.md#comparing-globs]: crate::reference::globs#comparing-globs\n\
         [globs.md#what-the-sandbox-enforces]: crate::reference::globs#what-the-sandbox-enforces\n\
         [manifest.md]: crate::reference::manifest\n\
         [findings.md]: crate::reference::findings\n\
         [cli.md]: crate::reference::cli\n\n"
    };
}
pub mod reference;
pub mod registry;
pub mod role;
pub mod testing;
pub mod tool;
pub mod union;

pub use args::{ReadPath, WritePath};
pub use denial::{Denial, DenialCode};
pub use error::LoadError;
pub use glob::{Glob, GlobError, GlobList};
pub use host::HostPattern;
pub use manifest::{Manifest, SourceLocation, ToolEntry};
pub use policy::{
    Constraints, EnvPolicy, ExecPolicy, FsPolicy, Limits, NetPolicy, Risk, Stance, ToolPolicy,
};
pub use registry::{Invocation, Registry, ToolCall, ToolResult};
pub use tool::{Access, CallContext, Tool, ToolError, ToolOutput, ToolSpec};
