//! trybuild cases: each `ui/fail` file is one distinct mistake whose message and span are
//! committed in its `.stderr`; each `ui/pass` file compiles and runs.
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test -p ui-tests --test ui`
//! and read every changed one before committing it.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
