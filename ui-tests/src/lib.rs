//! Tools annotated with `#[tool]`, `#[toolset]` and `#[tool_policy]`, shared by the tests in
//! `tests/`: one per DSL form, so that the committed manifest covers the whole syntax.

pub mod sample;
