//! Tier 1 of the capability lint: `#[tool]` rejects a body that uses a capability its policy
//! does not grant, at the span of the call, and never flags the not-flagged list.
//!
//! Regenerate the expected `.stderr` files with `TRYBUILD=overwrite cargo test -p ui-tests
//! --test lint` and read every changed file before committing it.

#[test]
fn lint() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("lint/fail/*.rs");
    cases.pass("lint/pass/*.rs");
}
