//! The policy DSL reader (being moved here from `policy-macros`).
