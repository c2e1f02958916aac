//! The lint as one line of a crate's own tests: `#[tool]` sees only the tool body, so names
//! imported at module level (`use std::fs; … fs::write(..)`) and helpers in other functions
//! are checked here, by `cargo test`, with no extra CI step.

use std::fmt;
use std::path::Path;

use super::{lint, render, Options, Report};

/// Why [`lint_crate`] failed: the human report of every violation, or why the crate could not
/// be read completely. `Debug` prints the same text, so that a test's `unwrap()` or `?` shows
/// the report as it is.
pub struct LintFailure {
    /// The rendered report (or the error).
    pub text: String,
    /// The report, when the lint ran.
    pub report: Option<Report>,
}

impl fmt::Display for LintFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for LintFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\n{}", self.text)
    }
}

impl std::error::Error for LintFailure {}

/// Runs `toolpolicy-lint` over the crate (or workspace) at `dir` and fails when any tool uses
/// more than it declares, or when part of the code could not be analysed. Meant for a test of
/// the crate itself:
///
/// ```no_run
/// #[test]
/// fn tools_use_only_what_they_declare() -> Result<(), manifest_verify::lint::LintFailure> {
///     manifest_verify::lint::lint_crate(env!("CARGO_MANIFEST_DIR"))
/// }
/// ```
///
/// It catches what the attribute cannot see: module-level `use` aliases, helpers in other
/// functions and modules, trait impls reached through `dyn` or generics, workspace crates.
pub fn lint_crate(dir: impl AsRef<Path>) -> Result<(), LintFailure> {
    let report = lint(dir.as_ref(), &Options::default()).map_err(|e| LintFailure {
        text: format!(
            "toolpolicy-lint could not run on {}: {e}",
            dir.as_ref().display()
        ),
        report: None,
    })?;
    if !report.violated() && report.problems.is_empty() {
        return Ok(());
    }
    let mut text = render::human(&report);
    if !report.problems.is_empty() {
        text.push_str("\nthe analysis is incomplete:\n");
        for problem in &report.problems {
            text.push_str(&format!("  {problem}\n"));
        }
    }
    Err(LintFailure {
        text,
        report: Some(report),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_crate(dir: &Path, lib: &str) {
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .unwrap();
        std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
    }

    #[test]
    fn module_level_imports_fail_the_test_with_the_report() {
        // The three forms the attribute cannot see.
        for (import, call) in [
            ("use std::fs;", "fs::write(&p, \"x\")"),
            ("use std::fs::write;", "write(&p, \"x\")"),
            ("use std::fs::write as save;", "save(&p, \"x\")"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            write_crate(
                dir.path(),
                &format!(
                    "{import}\n#[tool(policy(fs.read = [\"/data/**\"]))]\nfn t(p: String) -> Result<(), ToolError> {{\n    {call}?;\n    Ok(())\n}}\n"
                ),
            );
            let failure = lint_crate(dir.path()).unwrap_err();
            assert!(
                failure
                    .text
                    .contains("`std::fs::write` writes files but `t` declares no `fs.write`"),
                "{import}: {failure}"
            );
            assert!(
                format!("{failure:?}").contains("src/lib.rs:4"),
                "{failure:?}"
            );
        }
    }

    #[test]
    fn a_clean_crate_passes_and_an_unreadable_one_fails() {
        let dir = tempfile::tempdir().unwrap();
        write_crate(
            dir.path(),
            "use std::fs;\n#[tool(policy(fs.read = [\"/data/**\"]))]\nfn t(p: String) -> Result<String, ToolError> {\n    Ok(fs::read_to_string(&p)?)\n}\n",
        );
        lint_crate(dir.path()).unwrap();
        let missing = lint_crate(dir.path().join("nowhere")).unwrap_err();
        assert!(missing.report.is_none());
        assert!(missing.text.contains("could not run"), "{missing}");
    }
}
