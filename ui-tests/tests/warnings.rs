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
    // It reads as a lint: the item's path names the tool and what is wrong, with no closure or
    // generated type in it.
    assert!(
        warnings[0].starts_with(
            "warning: use of deprecated constant `summarize::toolpolicy::glob_widened_by_sandbox`: the OS sandbox enforces glob `/data/**/*.csv` as the wider directory tree `/data/**`"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("{closure"), "{stderr}");
    assert!(
        warnings[1].contains("glob `/out/report-*.md` as the wider directory tree `/out/**`"),
        "{stderr}"
    );
    // Each warning points at its glob.
    assert!(stderr.contains("widened.rs:7:26"), "{stderr}");
    assert!(stderr.contains("widened.rs:7:68"), "{stderr}");
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn doc_links_to_a_tool_are_the_function() {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let macros = newest(deps, "policy_macros", std::env::consts::DLL_SUFFIX);
    let runtime = newest(deps, "policy_runtime", ".rlib");
    let out = tempfile_dir();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/doc_links.rs");
    let rustdoc = std::env::var("RUSTDOC").unwrap_or_else(|_| "rustdoc".into());
    let output = Command::new(rustdoc)
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "lib",
            "--crate-name",
            "doc_links",
        ])
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg("--extern")
        .arg(format!("policy_macros={}", macros.display()))
        .arg("--extern")
        .arg(format!("policy_runtime={}", runtime.display()))
        .arg("-o")
        .arg(&out)
        .arg(&fixture)
        .output()
        .expect("rustdoc runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    // `broken_intra_doc_links` is denied in the fixture: an ambiguous link fails the build.
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("ambiguous"), "{stderr}");
    // The function's page says what was generated, since the type itself is hidden.
    let page = std::fs::read_to_string(out.join("doc_links/fn.summarize.html")).unwrap();
    assert!(
        page.contains("summarize::tool_spec()"),
        "the function's doc names the tool's spec"
    );
    assert!(!out.join("doc_links/struct.summarize.html").exists());
    let _ = std::fs::remove_dir_all(out);
}

/// A name no parallel test or run shares.
fn unique() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn tempfile_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("widened-{}", unique()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
