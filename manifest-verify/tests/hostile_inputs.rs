//! Issue 18: inputs that crashed, hung or fooled `manifest-verify`, each pinned by a test.

use std::path::Path;
use std::process::{Command, Output};

const MANIFEST: &str = r#"{"manifest_version": 1, "tools": {"t": {"net": "deny"}}}"#;

fn verify(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_manifest-verify"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Item 14: a revision starting with `-` was passed to `git show` as an option, and
/// `--output=FILE` made git write a file.
#[test]
fn a_revision_is_never_a_git_option() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("new.json"), MANIFEST).unwrap();
    assert!(git(dir.path(), &["init", "-q"]).status.success());
    assert!(git(dir.path(), &["add", "new.json"]).status.success());
    assert!(git(dir.path(), &["commit", "-q", "-m", "base"])
        .status
        .success());

    // The attack works on git itself: the argument is an option that writes a file.
    let bait = dir.path().join("bait");
    let arg = format!("--output={}:new.json", bait.display());
    let _ = git(dir.path(), &["show", &arg]);
    let written = dir.path().join("bait:new.json");
    assert!(
        written.exists(),
        "git show {arg} writes {}",
        written.display()
    );
    std::fs::remove_file(&written).unwrap();

    let o = verify(dir.path(), &["--", &arg, "new.json"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !written.exists() && !bait.exists(),
        "manifest-verify made git write a file"
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("git show"), "{stderr}");
}
