//! The tier 2 lint corpus: small crates under `tests/lint_corpus/`, each with an `expect.toml`
//! holding the ground truth (what the code really does, as `"tool capability"`), run through
//! `toolpolicy-lint`'s analysis. Prints precision and recall over the whole corpus.
//!
//! A case may carry `limitation = "..."`: the analysis is known to disagree with the ground
//! truth there. Such a case must still disagree (if it starts agreeing, drop the note), and its
//! error counts against the figures.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use manifest_verify::lint::{lint, render, Options};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lint_corpus")
}

fn cases() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expect.toml").exists())
        .collect();
    dirs.sort();
    dirs
}

struct Expect {
    violations: BTreeSet<String>,
    limitation: Option<String>,
}

fn expect(dir: &Path) -> Expect {
    let text = std::fs::read_to_string(dir.join("expect.toml")).unwrap();
    let table: toml::Table = text.parse().unwrap();
    Expect {
        violations: table["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect(),
        limitation: table
            .get("limitation")
            .and_then(|l| l.as_str())
            .map(str::to_string),
    }
}

fn found(dir: &Path) -> BTreeSet<String> {
    let report = lint(dir, &Options::default()).unwrap();
    assert!(
        report.problems.is_empty(),
        "{}: {:?}",
        dir.display(),
        report.problems
    );
    assert!(report.tools > 0, "{}: no tool found", dir.display());
    report
        .findings
        .iter()
        .map(|f| {
            let what = f.capability.map_or("unanalysable", |c| c.key());
            format!("{} {what}", f.tool)
        })
        .collect()
}

#[test]
fn corpus_matches_ground_truth_and_reports_precision_and_recall() {
    let cases = cases();
    assert!(cases.len() >= 25, "the corpus needs at least 25 cases");
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    let (mut verdict_right, mut failures) = (0usize, Vec::new());
    for dir in &cases {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let want = expect(dir);
        let got = found(dir);
        tp += got.intersection(&want.violations).count();
        fp += got.difference(&want.violations).count();
        fn_ += want.violations.difference(&got).count();
        if got.is_empty() == want.violations.is_empty() {
            verdict_right += 1;
        }
        match (&want.limitation, got == want.violations) {
            (None, false) => failures.push(format!(
                "{name}: expected {:?}, found {:?}",
                want.violations, got
            )),
            (Some(note), true) => failures.push(format!(
                "{name}: now matches the ground truth; remove `limitation = {note:?}`"
            )),
            _ => {}
        }
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    println!(
        "lint corpus: {} cases, {tp} true positives, {fp} false positives, {fn_} false negatives; \
         precision {:.3}, recall {:.3}; verdict right in {verdict_right}/{}",
        cases.len(),
        precision,
        recall,
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
