//! The attribute checks each tool body; this one line checks the rest of the crate (module-level
//! imports, helpers, trait impls) with `toolpolicy-lint`'s library, from `cargo test`.

#[test]
fn tools_use_only_what_they_declare() -> Result<(), manifest_verify::lint::LintFailure> {
    manifest_verify::lint::lint_crate(env!("CARGO_MANIFEST_DIR"))
}
