//! The annotated sample tools, end to end: the manifest they produce equals the committed one,
//! the gate runs before their bodies, and JSON arguments are checked with clear errors.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use policy_runtime::macro_support::registry_of;
use policy_runtime::registry::ToolCall;
use policy_runtime::tool::{Access, ToolErrorKind};
use serde_json::json;
use ui_tests::sample::{self, Notes, BODY_RUNS};

fn registry() -> policy_runtime::Registry {
    registry_of(sample::all_tools()).expect("sample tool names are unique")
}

#[test]
fn manifest_matches_the_committed_file() {
    policy_runtime::testing::assert_manifest_fresh(
        "tests/tool-manifest.json",
        &registry().manifest(),
    );
}

#[test]
fn specs_carry_what_the_attribute_says() {
    let spec = sample::write_report::tool_spec();
    assert_eq!(spec.name, "write_report");
    assert_eq!(
        spec.description,
        "Write a report file.\n\nThe body is written as given."
    );
    assert_eq!(spec.access_of("path"), Some(Access::Write));
    assert_eq!(spec.access_of("body"), None);
    let source = spec.source.as_ref().unwrap();
    assert_eq!(source.file, "ui-tests/src/sample.rs");
    let text = include_str!("../src/sample.rs");
    let line = text.lines().nth(source.line as usize - 1).unwrap();
    assert!(
        line.contains("fn write_report"),
        "line {}: {line}",
        source.line
    );
    assert_eq!(spec.input_schema["required"], json!(["path", "body"]));

    // Overrides, aliases and Vec/Option of path arguments.
    let grep = sample::search::tool_spec();
    assert_eq!(grep.name, "grep");
    assert_eq!(grep.description, "Search source files.");
    assert_eq!(grep.access_of("paths"), Some(Access::Read));
    assert_eq!(
        sample::copy::tool_spec().access_of("to"),
        Some(Access::Write)
    );
    assert_eq!(
        sample::copy::tool_spec().access_of("from"),
        Some(Access::Read)
    );
    assert_eq!(Notes::tool_specs().len(), 3);
    assert_eq!(
        sample::append::tool_spec().access_of("file"),
        Some(Access::Write)
    );
}

/// Tools whose path and URL parameters are not `ReadPath`/`WritePath`.
mod other_roles {
    use policy_macros::tool;
    use policy_runtime::tool::ToolError;

    /// Fetch a document into a cache folder.
    #[tool(policy(fs.write = ["/cache/**"], net = ["api.example.com:443"], risk = low))]
    pub fn fetch_into(
        endpoint: url::Url,
        cache: Option<std::path::PathBuf>,
        mirrors: Vec<url::Url>,
        dest: policy_runtime::WritePath,
        note: String,
    ) -> Result<String, ToolError> {
        Ok(format!("{endpoint} {cache:?} {mirrors:?} {dest:?} {note}"))
    }
}

/// Issue 14: every path or URL argument's role reaches the manifest and its hash.
#[test]
fn other_path_and_url_types_get_roles() {
    use policy_runtime::role::Role;
    let spec = other_roles::fetch_into::tool_spec();
    let roles = spec.arg_roles();
    let want = [
        ("cache", Role::Any),
        ("dest", Role::Write),
        ("endpoint", Role::Url),
        ("mirrors", Role::Url),
    ];
    assert_eq!(
        roles
            .iter()
            .map(|(k, r)| (k.as_str(), *r))
            .collect::<Vec<_>>(),
        want
    );
    let manifest = policy_runtime::macro_support::manifest_of([spec]);
    let entry = &manifest.tools["fetch_into"];
    assert_eq!(entry.role("dest"), Some(Role::Write));
    assert!(manifest.to_json().contains(r#""endpoint": "url""#));
}

/// Tests that run bodies take turns: `BODY_RUNS` is process-wide and tests run in parallel.
static BODIES: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn functions_stay_callable_as_written() {
    let _turn = BODIES.lock().unwrap_or_else(|e| e.into_inner());
    assert!(sample::read_file(policy_runtime::ReadPath::new("/x")).is_ok());
    let out = pollster::block_on(sample::write_report(
        policy_runtime::WritePath::new("/out/a"),
        "hi".into(),
    ));
    assert_eq!(out.unwrap(), "wrote 2 bytes to /out/a");
    assert_eq!(Notes::notes_version(), "1");
}

/// Every check that counts body runs lives in this one test: the counter is process-wide.
#[test]
fn denied_calls_never_run_the_body() {
    let _turn = BODIES.lock().unwrap_or_else(|e| e.into_inner());
    let registry = registry();
    let mut run = registry.start_invocation();
    let before = BODY_RUNS.load(Ordering::SeqCst);

    let denied = run.call_blocking(ToolCall::new("read_file", json!({"path": "/etc/passwd"})));
    assert_eq!(
        denied.denial().expect("outside fs.read").path.as_deref(),
        Some("/etc/passwd")
    );
    let escape = run.call_blocking(ToolCall::new(
        "read_file",
        json!({"path": "/data/../etc/shadow"}),
    ));
    assert!(escape.denial().is_some());
    let forbidden = run.call_blocking(ToolCall::new("wipe", json!({})));
    assert_eq!(
        forbidden.denial().unwrap().code.as_str(),
        "constraint.forbidden"
    );
    let read_as_write = run.call_blocking(ToolCall::new(
        "copy",
        json!({"from": "/data/a", "to": "/data/b"}),
    ));
    assert!(
        read_as_write.denial().is_some(),
        "an alias of Option<WritePath> is judged as a write"
    );
    let too_early = run.call_blocking(ToolCall::new(
        "write_report",
        json!({"path": "/out/r.md", "body": "x"}),
    ));
    assert_eq!(
        too_early.denial().unwrap().code.as_str(),
        "constraint.only_after"
    );
    let declared_write = run.call_blocking(ToolCall::new(
        "append",
        json!({"file": "/data/log", "line": "x"}),
    ));
    assert!(
        declared_write.denial().is_some(),
        "`paths(file = write)` judges a String as a write"
    );
    assert_eq!(
        BODY_RUNS.load(Ordering::SeqCst),
        before,
        "no denied call may run a body"
    );

    let ok = run.call_blocking(ToolCall::new(
        "read_file",
        json!({"path": "/data/x/../a.csv"}),
    ));
    assert!(ok.is_ok(), "{ok:?}");
    assert_eq!(
        ok.content, "read /data/a.csv",
        "the body sees the normalized path"
    );
    let copied = run.call_blocking(ToolCall::new("copy", json!({"from": "/data/a"})));
    assert!(copied.is_ok(), "{copied:?}");
    assert_eq!(BODY_RUNS.load(Ordering::SeqCst), before + 2);

    // Methods share the instance given to `tools()`.
    let notes = Arc::new(Notes::default());
    let registry = registry_of(notes.tools()).unwrap();
    let mut run = registry.start_invocation();
    assert!(run
        .call_blocking(ToolCall::new("list_notes", json!({})))
        .denial()
        .is_some());
    assert!(run
        .call_blocking(ToolCall::new("add_note", json!({"text": "a"})))
        .is_ok());
    let listed = run.call_blocking(ToolCall::new("list_notes", json!({})));
    assert_eq!(listed.content, "a");
    assert_eq!(notes.count(), 1);
}

#[test]
fn wrong_arguments_are_explained() {
    let _turn = BODIES.lock().unwrap_or_else(|e| e.into_inner());
    let registry = registry();
    let mut run = registry.start_invocation();
    let cases = [
        (json!({"pattern": "x"}), "missing argument `paths`"),
        (
            json!({"pattern": 3, "paths": []}),
            "argument `pattern`: invalid type: integer `3`, expected a string",
        ),
        (
            json!({"pattern": "x", "paths": [], "colour": true}),
            "unknown argument `colour`; it takes `pattern`, `paths`, `max`",
        ),
        (
            json!({"pattern": "x", "paths": [], "max": -1}),
            "argument `max`: invalid value",
        ),
    ];
    for (args, needle) in cases {
        let result = run.call_blocking(ToolCall::new("grep", args.clone()));
        let error = result
            .error()
            .unwrap_or_else(|| panic!("{args}: {result:?}"));
        assert_eq!(error.kind(), ToolErrorKind::InvalidArguments);
        assert!(
            error.message().contains(needle),
            "{args}: {}",
            error.message()
        );
        assert!(
            error.message().contains("`grep`"),
            "names the tool: {}",
            error.message()
        );
    }
    let ok = run.call_blocking(ToolCall::new(
        "grep",
        json!({"pattern": "x", "paths": ["/src/a.rs"]}),
    ));
    assert_eq!(ok.content, r#"{"max":null,"paths":1,"pattern":"x"}"#);
}
