//! The capability lint engine, run by both tiers: the `#[tool]` attribute (tier 1) and
//! `toolpolicy-lint` (tier 2). It proves that a tool uses no more than its policy grants.
//!
//! The two tiers see different amounts of code. The attribute sees one item, the tool's
//! signature and body, while the compiler expands it: it cannot see the module's `use`
//! declarations, other functions or other files. `toolpolicy-lint` reads the whole crate and
//! the workspace's path dependencies from source: modules, imports, re-exports, helpers,
//! methods, `macro_rules!` macros. Everything else is the same question asked of the same
//! syntax, so it is answered here once, and the only thing the engine is generic over is how
//! a name that leaves the body resolves ([`names::Names`]):
//!
//! | | tier 1 (`#[tool]`) | tier 2 (`toolpolicy-lint`) |
//! |---|---|---|
//! | names | the body's own `use`s, absolute paths, the catalogued crates ([`names::BodyOnly`]) | the crate and workspace, module by module |
//! | calls into the analysed code | not followed (the body is all there is) | followed: a call graph from each tool, explained by the call path |
//! | limits ([`walk::Limits`]) | the compiler's stack: 256 levels, then unanalysable | measured before parsing, then unlimited |
//! | findings become | `compile_error!`s at the call's span | human, JSON and SARIF reports |
//!
//! The pieces, in the order a check runs:
//!
//! - [`capability`]: the catalog (which calls use which capability) and what a policy grants.
//! - [`scope`] and [`walk`]: the one body walker, which turns a body into [`walk::Site`]s:
//!   catalogued uses and calls into the analysed code.
//! - [`findings`]: the one verdict ([`findings::judge`]) on each use, and the one findings type.
//! - [`syntax`]: how calls, literals and bindings read in a syntax tree.
//! - [`nesting`]: how deeply a token stream nests, measured before anything recursive parses it.

pub mod capability;
pub mod findings;
pub mod names;
pub mod nesting;
pub mod scope;
pub mod syntax;
pub mod walk;
