//! Reports of `toolpolicy-lint` on cases of the shared lint corpus (`tests/lint_corpus/`): call
//! paths, JSON and SARIF, manifests, trusted crates and the binary's exit codes.
//!
//! Every case's expected findings, in both tiers, are checked by the corpus harness in
//! `policy-macros` (`src/lint_corpus.rs`), which also prints precision and recall per tier.

use std::path::{Path, PathBuf};
use std::process::Command;

use manifest_verify::lint::{lint, render, Options};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lint_corpus")
}

#[test]
fn helpers_in_other_modules_are_explained_by_their_call_path() {
    let report = lint(
        &corpus().join("07-helper-other-module"),
        &Options::default(),
    )
    .unwrap();
    let f = &report.findings[0];
    assert_eq!(f.call, "std::fs::File::create");
    assert_eq!(f.at.file, "src/helpers.rs");
    let path: Vec<&str> = f.call_path.iter().map(|s| s.function.as_str()).collect();
    assert_eq!(path, ["export", "helpers::save"]);
    assert!(
        f.message.starts_with(
            "`std::fs::File::create` writes files but `export` declares no `fs.write`; \
             add `fs.write = [\"/out/**\"]` to the policy or remove the call"
        ),
        "{}",
        f.message
    );
    let human = render::human(&report);
    assert!(
        human.contains("call path: export (src/lib.rs:7) → helpers::save (src/helpers.rs:5)"),
        "{human}"
    );
}

#[test]
fn json_and_sarif_carry_every_finding() {
    let report = lint(&corpus().join("14-workspace-path-dep"), &Options::default()).unwrap();
    let json: serde_json::Value = serde_json::from_str(&render::json(&report)).unwrap();
    assert_eq!(json["violations"], true);
    assert_eq!(json["findings"][0]["code"], "lint.fs.write");
    assert_eq!(json["findings"][0]["capability"], "fs.write");
    assert_eq!(json["findings"][0]["file"], "storage/src/disk.rs");
    let sarif: serde_json::Value = serde_json::from_str(&render::sarif(&report)).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "lint.fs.write");
    assert_eq!(
        result["locations"][0]["physicalLocation"]["region"]["startLine"],
        2
    );
    assert_eq!(
        result["codeFlows"][0]["threadFlows"][0]["locations"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn a_manifest_can_supply_the_policies() {
    let manifest = policy_runtime::Manifest::from_json_str(
        "m.json",
        r#"{"manifest_version": 1, "tools": {"report": {"fs": {"write": ["/data/**"]}}}}"#,
    )
    .unwrap();
    let options = Options {
        manifest: Some(manifest),
        ..Options::default()
    };
    let report = lint(&corpus().join("01-direct-write"), &options).unwrap();
    assert!(!report.violated(), "{:?}", report.findings);
}

#[test]
fn trusted_crates_are_not_followed() {
    let case = corpus().join("14-workspace-path-dep");
    let options = Options {
        trusted: vec!["storage_kit".into()],
        ..Options::default()
    };
    assert!(!lint(&case, &options).unwrap().violated());
    assert!(lint(&case, &Options::default()).unwrap().violated());
}

#[test]
fn the_binary_exits_by_verdict() {
    let bin = env!("CARGO_BIN_EXE_toolpolicy-lint");
    let run = |case: &str, format: &str| {
        Command::new(bin)
            .arg(corpus().join(case))
            .args(["--format", format])
            .output()
            .unwrap()
    };
    let clean = run("02-direct-read-clean", "human");
    assert_eq!(clean.status.code(), Some(0));
    let dirty = run("05-glob-import", "json");
    assert_eq!(dirty.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&dirty.stdout).unwrap();
    assert_eq!(json["findings"][0]["call"], "std::env::var");
    let missing = Command::new(bin)
        .arg(corpus().join("no-such-case"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
}
