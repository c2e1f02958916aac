//! The widening warning in a real, successful build (trybuild's pass cases cannot see
//! warnings). The fixture is compiled by `rustc` against the `policy-macros` and
//! `policy-runtime` artifacts that cargo already built for this test, so it takes a second.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The most recently built `lib<name>-<hash>.<ext>` in `dir`.
fn newest(dir: &Path, name: &str, ext: &str) -> PathBuf {
    let prefix = format!("lib{name}-");
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let file = p.file_name().unwrap().to_string_lossy();
            file.starts_with(&prefix) && file.ends_with(ext)
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("no lib{name}-*{ext} in {}", dir.display()))
}

#[test]
fn non_tree_globs_warn_in_a_successful_build() {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let macros = newest(deps, "policy_macros", std::env::consts::DLL_SUFFIX);
    let runtime = newest(deps, "policy_runtime", ".rlib");
    let out = tempfile_dir();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/widened.rs");
    let output = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "lib",
            "--crate-name",
            "widened",
        ])
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg("--extern")
        .arg(format!("policy_macros={}", macros.display()))
        .arg("--extern")
        .arg(format!("policy_runtime={}", runtime.display()))
        .arg("--out-dir")
        .arg(&out)
        .arg(&fixture)
        .output()
        .expect("rustc runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the fixture must build:\n{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: use of deprecated"))
        .collect();
    assert_eq!(warnings.len(), 2, "{stderr}");
    assert!(
        warnings[0].contains("glob `/data/**/*.csv` as the wider directory tree `/data/**`"),
        "{stderr}"
    );
    assert!(
        warnings[1].contains("glob `/out/report-*.md` as the wider directory tree `/out/**`"),
        "{stderr}"
    );
    // Each warning points at its glob.
    assert!(stderr.contains("widened.rs:7:26"), "{stderr}");
    assert!(stderr.contains("widened.rs:7:68"), "{stderr}");
    let _ = std::fs::remove_dir_all(out);
}

fn tempfile_dir() -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("widened-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
