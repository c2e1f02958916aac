//! # manifest-verify
//!
//! Exact widening detection between two toolpolicy manifests, for pull-request review
//! ([`policy_runtime::reference::findings`], [`policy_runtime::reference::cli`]).
//!
//! Glob sets are compared by **language inclusion**, not by string: `/out/**` → `/out/sub/**`
//! narrows, `/out/*` → `/out/**` widens, reordering changes nothing. Every widening carries a
//! concrete witness — a path, a `host:port`, a variable name or a program — that the new
//! manifest admits and the old one did not.
//!
//! The entry point for other crates is [`diff_manifests`] (or a reusable [`Verifier`]); it
//! returns a [`Report`] of [`Finding`]s. [`source::load`] reads a manifest from a file or from
//! git (`REV:PATH`), and [`render`] prints a report in the formats of the command line.
//!
//! ```
//! use manifest_verify::{diff_manifests, Code};
//! use policy_runtime::Manifest;
//!
//! let old = Manifest::from_json_str("old.json", r#"{"manifest_version": 1, "tools": {
//!     "fetch": {"net": {"hosts": ["api.example.com:443"]}}}}"#)?;
//! let new = Manifest::from_json_str("new.json", r#"{"manifest_version": 1, "tools": {
//!     "fetch": {"net": {"hosts": ["*.example.com:443"]}}}}"#)?;
//! let report = diff_manifests(&old, &new);
//! assert!(report.widened());
//! assert_eq!(report.findings[0].code, Code::NetWidened);
//! assert_eq!(report.findings[0].witness.as_deref(), Some("www.example.com:443"));
//! # Ok::<(), policy_runtime::LoadError>(())
//! ```

pub mod args;
pub mod cli;
pub mod commands;
pub mod constraints;
pub mod diff;
pub mod env;
pub mod escalation;
pub mod exec;
pub mod findings;
pub mod fs;
pub mod hosts;
pub mod inclusion;
pub mod limits;
pub mod lint;
pub mod locate;
pub mod render;
pub mod repo;
pub mod risk;
pub mod source;

pub use diff::{diff_manifests, Verifier};
pub use findings::{Code, Finding, Report, Severity};
pub use source::{load, Input};
