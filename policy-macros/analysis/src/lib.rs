//! The parts of toolpolicy that read Rust source, shared by the `#[tool]` attribute
//! (`policy-macros`) and `toolpolicy-lint` (`manifest-verify`), so that the two can never
//! disagree.
//!
//! It is an ordinary library, nested in `policy-macros/` the way thiserror nests its
//! implementation crate, because a proc-macro crate cannot export anything but macros and the
//! lint needs the same code at run time. `policy-runtime` keeps the policy model and stays free
//! of syn.
//!
//! - [`dsl`]: the attribute language read into a [`policy_runtime::ToolPolicy`], with every
//!   error at the span where it was written.
//! - [`lint`]: the capability lint engine (catalog, body walker, verdict, findings, SARIF) that
//!   both tiers run.

pub mod dsl;
pub mod lint;
