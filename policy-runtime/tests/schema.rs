//! The JSON Schemas in `schema/` against real files: every manifest committed in the workspace
//! (the examples' manifest, the ui-tests snapshots, the verifier's corpus) and a TOML policy
//! with every part validate; inputs the loader rejects for their shape are rejected by the
//! schemas too.

use std::path::{Path, PathBuf};

use policy_runtime::manifest::Manifest;
use policy_runtime::ToolPolicy;
use serde_json::{json, Value};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn validator(file: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(file);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn errors(v: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    v.iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Every committed manifest: the examples', the ui-tests snapshots and the verifier's corpus.
fn committed_manifests() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![
        root.join("examples/tools.manifest.json"),
        root.join("ui-tests/tests/tool-manifest.json"),
        root.join("ui-tests/tests/rmcp-manifest.json"),
    ];
    for case in std::fs::read_dir(root.join("manifest-verify/tests/corpus")).unwrap() {
        let case = case.unwrap().path();
        files.push(case.join("old.json"));
        files.push(case.join("new.json"));
    }
    files
}

#[test]
fn committed_manifests_validate() {
    let v = validator("manifest.schema.json");
    let files = committed_manifests();
    assert!(files.len() > 80, "{} manifests", files.len());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        Manifest::from_json_str(&file.display().to_string(), &text).expect("the loader reads it");
        let value: Value = serde_json::from_str(&text).unwrap();
        let errs = errors(&v, &value);
        assert!(errs.is_empty(), "{}:\n{}", file.display(), errs.join("\n"));
    }
}

const POLICY_TOML: &str = r#"
risk = "high"
net = { hosts = ["api.example.com:443", "*.example.org:*", "127.0.0.1:8080", "[::1]:8080"] }
exec = { allow = ["git", "/usr/bin/rg"] }
env = { allow = ["HOME", "AWS_*"] }

[fs]
read = ["/data/**/*.csv", "/d/[a-c]/{x,y}.txt"]
write = []

[commands]
max_level = 3
deny_args = { git = ["-c", "--upload-pack"], cargo = ["publish"] }
chains = true
approve_from = 2

[constraints]
max_invocations = 3
only_after = ["fetch-url", "read_file"]
forbidden = false
requires_approval = true

[limits]
timeout_ms = 5000
memory_bytes = 1073741824
cpu_seconds = 10
max_processes = 8
max_output_bytes = 65536
max_file_bytes = 1048576
max_open_files = 64
"#;

#[test]
fn a_toml_policy_with_every_part_validates() {
    let policy = ToolPolicy::from_toml_str("p.toml", POLICY_TOML).expect("the loader reads it");
    let value: Value = toml::from_str(POLICY_TOML).unwrap();
    let v = validator("policy.schema.json");
    assert!(errors(&v, &value).is_empty(), "{:?}", errors(&v, &value));
    // The runtime's own output, in both formats, validates too.
    let written: Value = toml::from_str(&policy.to_toml()).unwrap();
    assert!(
        errors(&v, &written).is_empty(),
        "{:?}",
        errors(&v, &written)
    );
    let mut manifest = Manifest::new();
    manifest.insert("t", policy, None);
    let m: Value = serde_json::from_str(&manifest.to_json()).unwrap();
    let mv = validator("manifest.schema.json");
    assert!(errors(&mv, &m).is_empty(), "{:?}", errors(&mv, &m));
}

#[test]
fn what_the_loader_rejects_for_its_shape_the_schemas_reject() {
    let mv = validator("manifest.schema.json");
    let pv = validator("policy.schema.json");
    let tool = |entry: Value| json!({"manifest_version": 1, "tools": {"t": entry}});
    let bad_manifests = [
        (
            "unknown top-level key",
            json!({"manifest_version": 1, "tools": {}, "tool": {}}),
        ),
        ("version 2", json!({"manifest_version": 2, "tools": {}})),
        ("no tools", json!({"manifest_version": 1})),
        (
            "empty tool name",
            json!({"manifest_version": 1, "tools": {"": {}}}),
        ),
        (
            "control character in a name",
            json!({"manifest_version": 1, "tools": {"a\u{7}b": {}}}),
        ),
        ("unknown policy key", tool(json!({"nett": "deny"}))),
        ("relative glob", tool(json!({"fs": {"read": ["out/**"]}}))),
        (
            "dot-dot glob",
            tool(json!({"fs": {"write": ["/out/../etc"]}})),
        ),
        ("empty component", tool(json!({"fs": {"read": ["/a//b"]}}))),
        (
            "host without port",
            tool(json!({"net": {"hosts": ["api.example.com"]}})),
        ),
        (
            "uppercase host",
            tool(json!({"net": {"hosts": ["API.example.com:443"]}})),
        ),
        (
            "port 0",
            tool(json!({"net": {"hosts": ["a.example.com:0"]}})),
        ),
        (
            "relative program",
            tool(json!({"exec": {"allow": ["bin/git"]}})),
        ),
        ("env allow as a word", tool(json!({"env": "allow"}))),
        (
            "bad variable",
            tool(json!({"env": {"allow": ["BAD-NAME"]}})),
        ),
        ("unknown risk", tool(json!({"risk": "severe"}))),
        (
            "command level 6",
            tool(json!({"commands": {"max_level": 6}})),
        ),
        ("command level missing", tool(json!({"commands": {}}))),
        (
            "unknown command key",
            tool(json!({"commands": {"max_level": 1, "chain": true}})),
        ),
        (
            "deny_args on a path",
            tool(json!({"commands": {"max_level": 1, "deny_args": {"/bin/git": ["-c"]}}})),
        ),
        (
            "deny_args not a list",
            tool(json!({"commands": {"max_level": 1, "deny_args": {"git": "-c"}}})),
        ),
        (
            "negative limit",
            tool(json!({"limits": {"timeout_ms": -1}})),
        ),
        ("unknown limit", tool(json!({"limits": {"wall_ms": 1}}))),
        (
            "string bool",
            tool(json!({"constraints": {"forbidden": "true"}})),
        ),
        (
            "source without line",
            tool(json!({"source": {"file": "a.rs"}})),
        ),
    ];
    for (what, value) in bad_manifests {
        assert!(
            Manifest::from_json_str("m.json", &value.to_string()).is_err(),
            "the loader accepts {what}"
        );
        assert!(!errors(&mv, &value).is_empty(), "the schema accepts {what}");
    }
    // A policy file has no `source` and no `manifest_version`.
    for value in [
        json!({"source": {"file": "a.rs", "line": 1}}),
        json!({"risk": "low", "x": 1}),
    ] {
        assert!(ToolPolicy::from_json_str("p.json", &value.to_string()).is_err());
        assert!(!errors(&pv, &value).is_empty(), "{value}");
    }
    // Extensions are allowed at the top level of a manifest only.
    let ext = json!({"manifest_version": 1, "tools": {}, "x-team": {"owner": "a"}});
    assert!(Manifest::from_json_str("m.json", &ext.to_string()).is_ok());
    assert!(errors(&mv, &ext).is_empty());
}
