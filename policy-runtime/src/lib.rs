//! # policy-runtime
//!
//! The policy model, manifests, the in-process path gate, invocation constraints, approval and
//! audit for the tools of an AI agent. Everything else in toolpolicy (the attribute macro, the
//! verifier, the sandbox) reuses the model and the glob dialect defined here.
//!
//! This crate is OS-agnostic: it never confines a process. The sandbox crate does that.

pub mod error;
pub mod glob;
pub mod host;
pub mod manifest;
pub mod path;
pub mod policy;

pub use error::LoadError;
pub use glob::{Glob, GlobError, GlobList};
pub use host::HostPattern;
pub use manifest::{Manifest, SourceLocation, ToolEntry};
pub use policy::{
    Constraints, EnvPolicy, ExecPolicy, FsPolicy, Limits, NetPolicy, Risk, ToolPolicy,
};
