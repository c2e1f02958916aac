//! The GitHub Actions workflows in the READMEs: every step after the first check runs after a
//! failure (`if: always()`), both SARIF files are uploaded, and every `manifest-verify` command
//! they run is accepted by the real command line.

use std::path::Path;
use std::process::Command;

/// The steps (`- ` items under `steps:`) of the first YAML block that contains `marker`.
fn steps(readme: &str, marker: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(readme)).unwrap();
    let block = text
        .split("```yaml")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .find(|b| b.contains(marker))
        .unwrap_or_else(|| panic!("{readme}: no workflow with {marker}"));
    let body = block.split("steps:").nth(1).unwrap();
    let mut steps: Vec<String> = Vec::new();
    for line in body.lines() {
        if line.trim_start().starts_with("- ") && line.len() - line.trim_start().len() == 6 {
            steps.push(String::new());
        }
        if let Some(step) = steps.last_mut() {
            step.push_str(line.trim());
            step.push('\n');
        }
    }
    steps
}

fn check(readme: &str, first_check: &str, categories: &[&str]) {
    let steps = steps(readme, "name: tool policy");
    let first = steps
        .iter()
        .position(|s| s.contains(first_check))
        .unwrap_or_else(|| panic!("{readme}: no step with {first_check}"));
    assert!(steps.len() >= first + 4, "{readme}: {steps:?}");
    for step in &steps[first + 1..] {
        assert!(
            step.contains("if: always()"),
            "{readme}: a step that must run after a failure:\n{step}"
        );
    }
    for category in categories {
        assert!(
            steps.iter().any(|s| s.contains("upload-sarif") && s.contains(&format!("category: {category}"))),
            "{readme}: no SARIF upload for {category}"
        );
    }
    // Every manifest-verify command parses with the real command line (`--help` after the
    // arguments stops before any file is read).
    for step in steps
        .iter()
        .filter(|s| s.contains("manifest-verify \"origin"))
    {
        let command: String = step
            .lines()
            .skip_while(|l| !l.starts_with("manifest-verify"))
            .take_while(|l| !l.starts_with("- "))
            .collect::<Vec<_>>()
            .join(" ");
        let command = command
            .split(" > ")
            .next()
            .unwrap()
            .replace("${{ github.base_ref }}", "main");
        let args: Vec<&str> = command
            .split_whitespace()
            .skip(1)
            .map(|a| a.trim_matches('"'))
            .collect();
        let o = Command::new(env!("CARGO_BIN_EXE_manifest-verify"))
            .args(&args)
            .arg("--help")
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{readme}: {command}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn the_top_level_workflow_runs_every_check_and_uploads_both_sarif_files() {
    check(
        "../README.md",
        "manifest::is_fresh",
        &["toolpolicy-lint", "manifest-verify"],
    );
}

#[test]
fn the_manifest_verify_workflow_uploads_after_a_failure() {
    check("README.md", "dtolnay/rust-toolchain", &["manifest-verify"]);
}
