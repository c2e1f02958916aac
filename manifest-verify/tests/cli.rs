//! The command-line contract of `policy-runtime/docs/cli.md`: exit codes, formats, `REV:PATH`
//! inputs, an absent base, paths relative to the repository root, error documents, and SARIF
//! that the OASIS SARIF 2.1.0 schema (`tests/data/sarif-schema-2.1.0.json`, errata 01, as
//! published by the OASIS SARIF TC) accepts.

use std::path::Path;
use std::process::{Command, Output};

const OLD: &str = r#"{
  "manifest_version": 1,
  "tools": {
    "fetch": { "net": { "hosts": ["api.example.com:443"] } },
    "report": {
      "fs": { "write": ["/out/*"] },
      "source": { "file": "examples/src/tools.rs", "line": 12 }
    }
  }
}
"#;

const NARROWER: &str = r#"{
  "manifest_version": 1,
  "tools": {
    "fetch": { "net": { "hosts": ["api.example.com:443"] } },
    "report": {
      "fs": { "write": ["/out/a.txt"] },
      "source": { "file": "examples/src/tools.rs", "line": 12 }
    }
  }
}
"#;

const WIDER: &str = r#"{
  "manifest_version": 1,
  "tools": {
    "fetch": { "net": { "hosts": ["*.example.com:443"] } },
    "report": {
      "fs": { "write": ["/out/*"] },
      "source": { "file": "examples/src/tools.rs", "line": 12 }
    }
  }
}
"#;

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_manifest-verify"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn files(pairs: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in pairs {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn exit_codes() {
    let dir = files(&[
        ("old.json", OLD),
        ("narrow.json", NARROWER),
        ("wide.json", WIDER),
    ]);
    let same = run(dir.path(), &["old.json", "old.json"]);
    assert_eq!(same.status.code(), Some(0), "{}", stdout(&same));
    assert!(stdout(&same).contains("no widening"));

    let narrow = run(dir.path(), &["old.json", "narrow.json"]);
    assert_eq!(narrow.status.code(), Some(0), "{}", stdout(&narrow));
    assert!(stdout(&narrow).contains("tool.fs.write.narrowed"));

    let wide = run(dir.path(), &["old.json", "wide.json"]);
    assert_eq!(wide.status.code(), Some(1));
    let text = stdout(&wide);
    assert!(text.contains("tool.net.widened"), "{text}");
    assert!(text.contains("witness: www.example.com:443"), "{text}");
    assert!(
        text.contains(r#"old: {"hosts":["api.example.com:443"]}"#),
        "{text}"
    );
}

#[test]
fn invalid_inputs_exit_2_naming_file_line_and_column() {
    let bad_key = OLD.replace("\"net\"", "\"nett\"");
    let bad_version = OLD.replace("\"manifest_version\": 1", "\"manifest_version\": 7");
    let bad_glob = OLD.replace("/out/*", "out/*");
    let dir = files(&[
        ("old.json", OLD),
        ("key.json", &bad_key),
        ("version.json", &bad_version),
        ("glob.json", &bad_glob),
    ]);
    for (file, needle, line) in [
        ("key.json", "unknown field `nett`", 4),
        ("version.json", "unsupported manifest_version 7", 2),
        ("glob.json", "absolute", 6),
    ] {
        let o = run(dir.path(), &["old.json", file]);
        assert_eq!(o.status.code(), Some(2), "{file}");
        let err = stderr(&o);
        assert!(err.contains(needle), "{file}: {err}");
        assert!(err.contains(&format!("{file}:{line}:")), "{file}: {err}");
        assert!(o.stdout.is_empty(), "{file}: nothing on stdout");
    }
    let missing = run(dir.path(), &["old.json", "nope.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("nope.json"));
    let usage = run(dir.path(), &["old.json"]);
    assert_eq!(usage.status.code(), Some(2));
    let format = run(dir.path(), &["old.json", "old.json", "--format", "xml"]);
    assert_eq!(format.status.code(), Some(2));
}

#[test]
fn json_format() {
    let dir = files(&[("old.json", OLD), ("wide.json", WIDER)]);
    let o = run(dir.path(), &["old.json", "wide.json", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["widened"], true);
    let f = &v["findings"][0];
    let mut keys: Vec<&str> = f.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        ["code", "message", "path", "severity", "tool", "witness"]
    );
    assert_eq!(f["code"], "tool.net.widened");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["tool"], "fetch");
    assert_eq!(f["path"], "tools.fetch.net");
    assert_eq!(f["witness"], "www.example.com:443");
}

#[test]
fn sarif_format() {
    let dir = files(&[
        ("old.json", OLD),
        ("wide.json", WIDER),
        ("narrow.json", NARROWER),
    ]);
    let o = run(dir.path(), &["old.json", "wide.json", "--format", "sarif"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let run0 = &v["runs"][0];
    let rules = run0["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), manifest_verify::Code::ALL.len());
    let r = &run0["results"][0];
    assert_eq!(r["ruleId"], "tool.net.widened");
    assert_eq!(
        rules[r["ruleIndex"].as_u64().unwrap() as usize]["id"],
        "tool.net.widened"
    );
    assert_eq!(r["level"], "error");
    // No `source` for `fetch`: the line of its `net` key in the new manifest.
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "wide.json");
    assert_eq!(loc["region"]["startLine"], 4);
    assert!(r["message"]["text"]
        .as_str()
        .unwrap()
        .contains("www.example.com:443"));

    // `report` has a `source`: the location is the tool's definition.
    let o = run(
        dir.path(),
        &["old.json", "narrow.json", "--format", "sarif"],
    );
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let r = &v["runs"][0]["results"][0];
    assert_eq!(r["level"], "note");
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "examples/src/tools.rs");
    assert_eq!(loc["region"]["startLine"], 12);
}

#[test]
fn github_format() {
    let dir = files(&[("old.json", OLD), ("wide.json", WIDER)]);
    let o = run(dir.path(), &["old.json", "wide.json", "--format", "github"]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("::error file=wide.json,line=4,col="),
        "{first}"
    );
    assert!(first.contains("title=tool.net.widened fetch::"), "{first}");
    assert!(
        first.ends_with("which the old policy did not allow. Witness: www.example.com:443."),
        "{first}"
    );
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

#[test]
fn rev_path_reads_from_git() {
    let dir = files(&[("tools.manifest.json", OLD)]);
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "tools.manifest.json"]);
    git(dir.path(), &["commit", "-q", "-m", "base"]);
    std::fs::write(dir.path().join("tools.manifest.json"), WIDER).unwrap();

    let o = run(
        dir.path(),
        &["HEAD:tools.manifest.json", "tools.manifest.json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("tool.net.widened"));

    let o = run(
        dir.path(),
        &["HEAD:tools.manifest.json", "HEAD:tools.manifest.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let o = run(dir.path(), &["tools.manifest.json", "HEAD:missing.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("HEAD:missing.json"), "{}", stderr(&o));

    // A file whose name looks like REV:PATH is read as the file.
    std::fs::write(dir.path().join("HEAD:tools.manifest.json"), WIDER).unwrap();
    let o = run(
        dir.path(),
        &["HEAD:tools.manifest.json", "tools.manifest.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// Every error of `log` against the OASIS SARIF 2.1.0 schema.
fn sarif_schema_errors(log: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("data/sarif-schema-2.1.0.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    validator
        .iter_errors(log)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// The structural rules GitHub code scanning adds to the schema for an upload.
fn assert_github_accepts(log: &serde_json::Value) {
    assert_eq!(log["version"], "2.1.0");
    for run in log["runs"].as_array().unwrap() {
        assert!(run["tool"]["driver"]["name"].is_string());
        for r in run["results"].as_array().unwrap() {
            assert!(r["message"]["text"].as_str().is_some_and(|t| !t.is_empty()));
            let loc = &r["locations"][0]["physicalLocation"];
            let uri = loc["artifactLocation"]["uri"].as_str().unwrap();
            assert!(
                uri.bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'#' && b != b'[' && b != b' '),
                "{uri}"
            );
            assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1);
            assert!(r["partialFingerprints"].is_object());
        }
    }
}

#[test]
fn sarif_matches_the_oasis_schema() {
    let removed = r#"{"manifest_version": 1, "tools": {
  "gone": {"exec": "allow", "source": {"file": "src/café [gen]/x#1.rs", "line": 3}}}}
"#;
    let dir = files(&[
        ("old.json", OLD),
        ("wide.json", WIDER),
        ("narrow.json", NARROWER),
        ("removed.json", removed),
        ("empty.json", r#"{"manifest_version": 1, "tools": {}}"#),
        ("bad.json", &OLD.replace("\"net\"", "\"nett\"")),
    ]);
    let mut logs = Vec::new();
    for (old, new, code) in [
        ("old.json", "wide.json", 1),
        ("old.json", "narrow.json", 0),
        ("removed.json", "empty.json", 0),
        ("empty.json", "removed.json", 1),
        ("old.json", "bad.json", 2),
        ("old.json", "missing.json", 2),
    ] {
        let o = run(dir.path(), &[old, new, "--format", "sarif"]);
        assert_eq!(o.status.code(), Some(code), "{old} {new}: {}", stderr(&o));
        let log: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let errors = sarif_schema_errors(&log);
        assert!(errors.is_empty(), "{old} {new}:\n{}", errors.join("\n"));
        assert_github_accepts(&log);
        logs.push(log);
    }
    // The schema does reject a broken log, so the check above has teeth.
    let mut broken = logs[0].clone();
    broken["runs"][0]["results"][0]["level"] = "severe".into();
    broken["runs"][0]["invocations"][0]
        .as_object_mut()
        .unwrap()
        .remove("executionSuccessful");
    assert_eq!(sarif_schema_errors(&broken).len(), 2, "{broken}");
}

#[test]
fn sarif_content_for_code_scanning() {
    let removed = r#"{
  "manifest_version": 1,
  "tools": {
    "fetch": { "net": { "hosts": ["api.example.com:443"] } },
    "gone": { "exec": "allow", "source": { "file": "src/gone.rs", "line": 9 } }
  }
}
"#;
    let odd = OLD.replace("examples/src/tools.rs", "src/café [gen]/x#1.rs");
    let odd_wide = WIDER.replace("examples/src/tools.rs", "src/café [gen]/x#1.rs");
    let dir = files(&[
        ("removed.json", removed),
        ("old.json", &odd),
        ("wide.json", &odd_wide),
    ]);
    // Messages are sentences, with the witness as one more.
    let o = run(dir.path(), &["old.json", "wide.json", "--format", "sarif"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let text = v["runs"][0]["results"][0]["message"]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.ends_with("which the old policy did not allow. Witness: www.example.com:443."),
        "{text}"
    );

    // A removed tool points at its key in the old manifest, not at its (deleted) source.
    let o = run(
        dir.path(),
        &["removed.json", "old.json", "--format", "sarif"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let results = v["runs"][0]["results"].as_array().unwrap();
    let gone = results
        .iter()
        .find(|r| r["ruleId"] == "tool.removed")
        .unwrap();
    let loc = &gone["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "removed.json");
    assert_eq!(loc["region"]["startLine"], 5);

    // The added tool's source path is percent-encoded per RFC 3986.
    let added = results
        .iter()
        .find(|r| r["ruleId"] == "tool.added")
        .unwrap();
    assert_eq!(
        added["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "src/caf%C3%A9%20%5Bgen%5D/x%231.rs"
    );
}

#[test]
fn help_lists_the_exit_codes() {
    let dir = files(&[]);
    let o = run(dir.path(), &["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    assert!(text.contains("Exit status:"), "{text}");
    for line in [
        "  0  no widening",
        "  1  at least one widening",
        "  2  an input could not be read",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
}

#[test]
fn exit_2_prints_an_error_document_in_machine_formats() {
    let bad = OLD.replace("\"net\"", "\"nett\"");
    let dir = files(&[("old.json", OLD), ("bad.json", &bad)]);

    let o = run(dir.path(), &["old.json", "bad.json", "--format", "json"]);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["error"]["file"], "bad.json");
    assert_eq!(v["error"]["line"], 4);
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unknown field `nett`"));
    assert!(
        stderr(&o).contains("bad.json:4:"),
        "the diagnostic still goes to stderr"
    );

    let o = run(dir.path(), &["old.json", "bad.json", "--format", "sarif"]);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let invocation = &v["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    let note = &invocation["toolExecutionNotifications"][0];
    assert_eq!(note["level"], "error");
    assert!(note["message"]["text"]
        .as_str()
        .unwrap()
        .contains("unknown field `nett`"));
    let loc = &note["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "bad.json");
    assert_eq!(loc["region"]["startLine"], 4);
    assert_eq!(v["runs"][0]["results"].as_array().unwrap().len(), 0);

    let o = run(dir.path(), &["old.json", "bad.json", "--format", "github"]);
    assert_eq!(o.status.code(), Some(2));
    let line = stdout(&o);
    assert!(
        line.starts_with("::error file=bad.json,line=4,col="),
        "{line}"
    );
    assert!(line.contains("unknown field `nett`"), "{line}");

    // Human output keeps stdout empty: the diagnostic is on stderr.
    let o = run(dir.path(), &["old.json", "bad.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
}

#[test]
fn bad_usage_in_a_machine_format_still_prints_an_error_document() {
    let dir = files(&[("old.json", OLD)]);
    let o = run(dir.path(), &["old.json", "--format", "sarif"]);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let invocation = &v["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    let text = invocation["toolExecutionNotifications"][0]["message"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("<NEW>"), "{text}");
    assert!(sarif_schema_errors(&v).is_empty(), "{v}");

    let o = run(dir.path(), &["old.json", "--format=json"]);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["error"]["file"].is_null());
    assert!(v["error"]["message"].as_str().unwrap().contains("<NEW>"));

    let o = run(dir.path(), &["old.json", "--format", "github"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).starts_with("::error title=manifest-verify::"),
        "{}",
        stdout(&o)
    );

    // An unreadable format gets no document: there is no telling which one was meant.
    let o = run(dir.path(), &["old.json", "old.json", "--format", "xml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
}

#[test]
fn tool_names_must_be_callable() {
    let empty = OLD.replace("\"fetch\"", "\"\"");
    let control = OLD.replace("\"fetch\"", "\"fe\\u0007tch\"");
    let dir = files(&[
        ("old.json", OLD),
        ("empty.json", &empty),
        ("control.json", &control),
    ]);
    for (file, needle) in [
        ("empty.json", "a tool name cannot be empty"),
        (
            "control.json",
            "a tool name cannot contain a control character (found U+0007)",
        ),
    ] {
        let o = run(dir.path(), &["old.json", file]);
        assert_eq!(o.status.code(), Some(2), "{file}");
        let err = stderr(&o);
        assert!(err.contains(needle), "{file}: {err}");
        assert!(err.contains(&format!("{file}:4:")), "{file}: {err}");
        assert!(
            !err.contains('\u{7}'),
            "the control character is not echoed"
        );
    }
}

#[test]
fn a_manifest_new_in_the_change_is_compared_with_an_empty_base() {
    let dir = files(&[("README", "base\n")]);
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "README"]);
    git(dir.path(), &["commit", "-q", "-m", "base"]);
    std::fs::write(dir.path().join("tools.manifest.json"), OLD).unwrap();

    let o = run(
        dir.path(),
        &["HEAD:tools.manifest.json", "tools.manifest.json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text.matches("tool.added").count(), 2, "{text}");
    let err = stderr(&o);
    assert!(
        err.contains("note: `tools.manifest.json` does not exist at `HEAD`: the manifest is new"),
        "{err}"
    );
    assert!(!err.contains("fetch"), "{err}");

    let o = run(
        dir.path(),
        &[
            "HEAD:tools.manifest.json",
            "tools.manifest.json",
            "--format",
            "github",
        ],
    );
    assert!(stdout(&o).starts_with(
        "::notice title=manifest-verify::`tools.manifest.json` does not exist at `HEAD`"
    ));
    let o = run(
        dir.path(),
        &[
            "HEAD:tools.manifest.json",
            "tools.manifest.json",
            "--format",
            "sarif",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let note = &v["runs"][0]["invocations"][0]["toolExecutionNotifications"][0];
    assert_eq!(note["level"], "note");
    assert!(note["message"]["text"]
        .as_str()
        .unwrap()
        .contains("does not exist at `HEAD`"));
    assert!(sarif_schema_errors(&v).is_empty());

    // The new side absent at a revision is an error, and says so without advice to fetch.
    let o = run(
        dir.path(),
        &["tools.manifest.json", "HEAD:tools.manifest.json"],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("`tools.manifest.json` does not exist at `HEAD`"),
        "{err}"
    );
    assert!(!err.contains("fetch"), "{err}");

    // A revision that is not in the clone is an error on either side, with the advice to fetch.
    let o = run(
        dir.path(),
        &["origin/main:tools.manifest.json", "tools.manifest.json"],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("the revision `origin/main` is not in this clone"),
        "{err}"
    );
    assert!(err.contains("fetch it"), "{err}");
}

#[test]
fn locations_are_relative_to_the_repository_root() {
    let dir = files(&[]);
    let sub = dir.path().join("vendor/ws");
    std::fs::create_dir_all(sub.join("src")).unwrap();
    std::fs::write(sub.join("src/tools.rs"), "// tools\n").unwrap();
    let wide = WIDER.replace("examples/src/tools.rs", "src/tools.rs");
    let old = OLD.replace("examples/src/tools.rs", "src/tools.rs");
    std::fs::write(sub.join("old.json"), &old).unwrap();
    std::fs::write(
        sub.join("wide.json"),
        wide.replace("\"/out/*\"", "\"/out/**\""),
    )
    .unwrap();
    git(dir.path(), &["init", "-q"]);

    // Run from vendor/ws: the manifest is vendor/ws/wide.json, and the macro's workspace-relative
    // source file is found under the manifest's directory.
    let o = run(&sub, &["old.json", "wide.json", "--format", "github"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("::error file=vendor/ws/wide.json,line=4,"),
        "{text}"
    );
    assert!(
        text.contains("::error file=vendor/ws/src/tools.rs,line=12,"),
        "{text}"
    );

    let o = run(&sub, &["old.json", "wide.json", "--format", "sarif"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let uris: Vec<&str> = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert!(uris.contains(&"vendor/ws/wide.json"), "{uris:?}");
    assert!(uris.contains(&"vendor/ws/src/tools.rs"), "{uris:?}");
}

/// `toolpolicy-lint --format sarif` on the crate `src` (files under `src/`), with its exit code.
fn lint_sarif(src: &[(&str, &str)]) -> (Option<i32>, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    for (name, text) in src {
        std::fs::write(dir.path().join("src").join(name), text).unwrap();
    }
    let o = Command::new(env!("CARGO_BIN_EXE_toolpolicy-lint"))
        .arg(dir.path())
        .args(["--format", "sarif"])
        .output()
        .unwrap();
    (o.status.code(), serde_json::from_slice(&o.stdout).unwrap())
}

const LINT_HELPER: &str =
    "pub fn save(text: &str) {\n    std::fs::write(\"/out/x\", text).unwrap();\n}\n";
const LINT_TOOL: &str = "mod helpers;\n\n/// Exports.\n#[tool(policy(fs.read = [\"/data/**\"]))]\nfn export(text: String) {\n    crate::helpers::save(&text);\n    unsafe { libc::syscall(1) };\n}\n";

/// The lint's SARIF comes from the same renderer as the verifier's and passes the same checks:
/// the OASIS schema, and what code scanning requires of a result.
#[test]
fn lint_sarif_matches_the_oasis_schema() {
    let cases: [(&[(&str, &str)], i32); 3] = [
        (&[("lib.rs", LINT_TOOL), ("helpers.rs", LINT_HELPER)], 1),
        (
            &[(
                "lib.rs",
                "#[tool(policy(fs.read = [\"/d/**\"]))]\nfn t() { std::fs::read(\"/d/a\"); }\n",
            )],
            0,
        ),
        (&[("lib.rs", "mod gone;\nfn f( {\n")], 2),
    ];
    for (src, code) in cases {
        let (exit, log) = lint_sarif(src);
        assert_eq!(exit, Some(code), "{log}");
        let errors = sarif_schema_errors(&log);
        assert!(errors.is_empty(), "{}\n{log}", errors.join("\n"));
        assert_github_accepts(&log);
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap();
        assert_eq!(rules.len(), 7);
        for rule in rules {
            for field in ["shortDescription", "fullDescription"] {
                assert!(
                    rule[field]["text"].as_str().is_some_and(|t| !t.is_empty()),
                    "{rule}"
                );
            }
            assert!(rule["help"]["text"].is_string() && rule["help"]["markdown"].is_string());
        }
        for result in log["runs"][0]["results"].as_array().unwrap() {
            let index = result["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[index]["id"], result["ruleId"]);
        }
    }
}

/// A lint finding keeps its fingerprint when lines above it move, and two findings differ.
#[test]
fn lint_fingerprints_follow_the_code_not_the_line() {
    let prints = |tool: &str| {
        let (_, log) = lint_sarif(&[("lib.rs", tool), ("helpers.rs", LINT_HELPER)]);
        log["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let line = &r["locations"][0]["physicalLocation"]["region"]["startLine"];
                (
                    r["ruleId"].as_str().unwrap().to_string(),
                    line.as_u64().unwrap(),
                    r["partialFingerprints"]["toolpolicyFinding/v1"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let before = prints(LINT_TOOL);
    let after = prints(&format!("// a new comment\n\n{LINT_TOOL}"));
    assert_eq!(before.len(), 2, "{before:?}");
    let rules: Vec<&str> = before.iter().map(|(r, _, _)| r.as_str()).collect();
    assert!(rules.contains(&"lint.fs.write") && rules.contains(&"lint.unanalysable"));
    assert_ne!(before[0].2, before[1].2);
    let lines_moved = before
        .iter()
        .zip(&after)
        .any(|((_, a, _), (_, b, _))| a != b);
    assert!(lines_moved, "{before:?} {after:?}");
    let unchanged = |v: &[(String, u64, String)]| -> Vec<(String, String)> {
        let mut v: Vec<_> = v.iter().map(|(r, _, p)| (r.clone(), p.clone())).collect();
        v.sort();
        v
    };
    assert_eq!(unchanged(&before), unchanged(&after));
}
