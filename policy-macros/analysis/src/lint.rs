//! The capability lint engine, run by both tiers: the `#[tool]` attribute (tier 1, the body
//! alone) and `toolpolicy-lint` (tier 2, the crate or workspace).
//!
//! - [`capability`]: the catalog (which calls use which capability) and what a policy grants.
//! - [`syntax`]: how calls, literals and bindings read in a syntax tree.
//! - [`nesting`]: how deeply a token stream nests, measured before anything recursive parses it.

pub mod capability;
pub mod names;
pub mod nesting;
pub mod scope;
pub mod syntax;
pub mod walk;
