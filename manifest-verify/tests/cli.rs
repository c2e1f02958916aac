//! The command-line contract of spec §5: exit codes, formats, `REV:PATH` inputs.

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
        first.ends_with("(witness: www.example.com%3A443)")
            || first.ends_with("(witness: www.example.com:443)"),
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

    let o = run(dir.path(), &["HEAD:missing.json", "tools.manifest.json"]);
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
