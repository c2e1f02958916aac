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

/// Item 20: the new-tool summary said "fs.read unspecified (any path)" for a tool with only
/// `fs.write`, while the gate denies it every other path. The summary now says what the gate
/// does, and the gate is asked to prove it.
#[test]
fn new_tool_summary_says_what_the_gate_does() {
    use manifest_verify::{diff_manifests, Code};
    use policy_runtime::gate::check_path;
    use policy_runtime::tool::Access;
    use policy_runtime::Manifest;

    let old =
        Manifest::from_json_str("old.json", r#"{"manifest_version": 1, "tools": {}}"#).unwrap();
    let new = Manifest::from_json_str(
        "new.json",
        r#"{"manifest_version": 1, "tools": {
            "w": {"fs": {"write": ["/srv/out/**"]}},
            "r": {"fs": {"read": ["/srv/in/**"]}},
            "any": {}}}"#,
    )
    .unwrap();
    let report = diff_manifests(&old, &new);
    let message = |tool: &str| {
        report
            .findings
            .iter()
            .find(|f| f.code == Code::ToolAdded && f.tool == tool)
            .unwrap()
            .message
            .clone()
    };
    let w = message("w");
    assert!(
        w.contains("fs.read unspecified (only the fs.write paths)"),
        "{w}"
    );
    assert!(!w.contains("any path"), "{w}");
    let policy = &new.tools["w"].policy;
    assert!(check_path(policy, "/etc/passwd", Access::Read, None).is_err());
    assert!(check_path(policy, "/srv/out/a", Access::Read, None).is_ok());

    let r = message("r");
    assert!(r.contains("fs.write unspecified (no path)"), "{r}");
    let policy = &new.tools["r"].policy;
    assert!(check_path(policy, "/srv/in/a", Access::Write, None).is_err());

    let any = message("any");
    assert!(any.contains("fs.read unspecified (any path)"), "{any}");
    assert!(any.contains("fs.write unspecified (any path)"), "{any}");
    let policy = &new.tools["any"].policy;
    assert!(check_path(policy, "/etc/passwd", Access::Write, None).is_ok());
}

/// A manifest of `n` tools on one line; tool `i` gets `policy(i)`.
fn one_line_manifest(n: usize, policy: impl Fn(usize) -> String) -> String {
    let tools: Vec<String> = (0..n)
        .map(|i| format!("\"tool{i:05}\":{}", policy(i)))
        .collect();
    format!(
        "{{\"manifest_version\":1,\"tools\":{{{}}}}}",
        tools.join(",")
    )
}

/// Item 2: findings and load errors past column 65,535 of a one-line manifest made miette
/// panic ("Formatting argument out of range").
#[test]
fn one_line_manifests_render_past_column_65535() {
    let dir = tempfile::tempdir().unwrap();
    let old = one_line_manifest(10_000, |_| r#"{"net":"deny"}"#.to_string());
    let new = one_line_manifest(10_000, |i| {
        if i == 9_999 {
            r#"{"net":"allow"}"#.to_string()
        } else {
            r#"{"net":"deny"}"#.to_string()
        }
    });
    assert!(new.len() > 65_535 * 2);
    std::fs::write(dir.path().join("old.json"), &old).unwrap();
    std::fs::write(dir.path().join("new.json"), &new).unwrap();
    let o = verify(dir.path(), &["old.json", "new.json"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("tool.net.widened"), "{stdout}");
    assert!(stdout.contains("new.json:1:"), "{stdout}");
    assert!(stdout.len() < 10_000, "no snippet of the whole line");

    // A load error at the far end of the line.
    let broken = format!("{}x}}", &new[..new.len() - 1]);
    std::fs::write(dir.path().join("broken.json"), &broken).unwrap();
    let o = verify(dir.path(), &["old.json", "broken.json"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("broken.json:1:"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Item 7: star-chain globs took 24 s per tool and claimed "undecided, treated as widened"
/// with no word about why. Each tool now stops at the documented budget, and says so; a
/// real narrowing that hits the budget says "undecided" and names no witness.
#[test]
fn star_chains_stop_at_the_budget_and_say_so() {
    let chain = |unit: &str, tail: &str| format!("/{}{tail}", unit.repeat(1_900));
    let (a, b) = (chain("a*", "b"), chain("*a", "*"));
    assert!(b.len() < policy_runtime::glob::MAX_GLOB_LEN);
    let manifest = |globs: &[&str; 3]| {
        let tools: Vec<String> = globs
            .iter()
            .enumerate()
            .map(|(i, g)| format!(r#""t{i}": {{"fs": {{"read": ["{g}"]}}}}"#))
            .collect();
        format!(
            r#"{{"manifest_version": 1, "tools": {{{}}}}}"#,
            tools.join(",")
        )
    };
    let dir = tempfile::tempdir().unwrap();
    // t0 and t1 widen (`a…b` → `*a…*`); t2 narrows (`*a…*` → `a…b`).
    std::fs::write(dir.path().join("old.json"), manifest(&[&a, &a, &b])).unwrap();
    std::fs::write(dir.path().join("new.json"), manifest(&[&b, &b, &a])).unwrap();
    let start = std::time::Instant::now();
    let o = verify(dir.path(), &["old.json", "new.json", "--format", "json"]);
    let elapsed = start.elapsed();
    assert_eq!(o.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    for tool in ["t0", "t1", "t2"] {
        let f = findings
            .iter()
            .find(|f| f["tool"] == tool && f["code"] == "tool.fs.read.widened")
            .unwrap_or_else(|| panic!("{tool}: {findings:?}"));
        let message = f["message"].as_str().unwrap();
        assert!(message.starts_with("undecided:"), "{message}");
        assert!(message.contains("budget of 250 ms per tool"), "{message}");
        assert!(
            f["witness"].is_null(),
            "no witness for an undecided verdict: {f}"
        );
    }
    // Three tools at 250 ms each, plus compiling 4 KB globs in a debug build.
    assert!(elapsed.as_secs() < 10, "{elapsed:?}");
}

/// Item 8: SARIF is written result by result (a JSON value of 10,000 results held 673 MB); the
/// text is the same log.
#[test]
fn streamed_sarif_is_the_same_log() {
    use manifest_verify::render::{sarif, Inputs};
    use manifest_verify::{diff_manifests, Input};

    let old = one_line_manifest(50, |_| r#"{"net":"deny","fs":{"read":["/a/*"]}}"#.into());
    let new = one_line_manifest(50, |i| {
        format!(r#"{{"net":"allow","fs":{{"read":["/a/**","/b{i}"]}}}}"#)
    });
    let old = Input::from_text("old.json", "old.json", old).unwrap();
    let new = Input::from_text("new.json", "new.json", new).unwrap();
    let report = diff_manifests(&old.manifest, &new.manifest);
    assert!(report.findings.len() >= 100, "{}", report.findings.len());
    let inputs = Inputs {
        old: &old,
        new: &new,
    };
    let text = sarif::render(&report, inputs);
    let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, sarif::log(&report, inputs));
    let none = manifest_verify::Report { findings: vec![] };
    let parsed: serde_json::Value = serde_json::from_str(&sarif::render(&none, inputs)).unwrap();
    assert_eq!(parsed, sarif::log(&none, inputs));
}
