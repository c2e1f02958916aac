//! Dispatch through the registry: gate, every constraint, approval, hooks and audit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use policy_runtime::approval::{Approval, ApprovalRequest, Approver};
use policy_runtime::audit::{JsonlSink, MemorySink};
use policy_runtime::registry::{Registry, ToolCall};
use policy_runtime::tool::{fn_tool, Access, ToolError, ToolSpec};
use policy_runtime::{DenialCode, Risk, ToolPolicy};
use serde_json::{json, Value};

fn policy(json: &str) -> ToolPolicy {
    ToolPolicy::from_json_str("test", json).unwrap()
}

/// A registry with one counting tool per `(name, policy)`; the counter says how often bodies ran.
fn registry(tools: &[(&str, &str)]) -> (Registry, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut r = Registry::new();
    for (name, p) in tools {
        let runs = runs.clone();
        let spec = ToolSpec::new(*name, policy(p))
            .path_arg("src", Access::Read)
            .path_arg("dest", Access::Write);
        r.register(fn_tool(spec, move |_ctx, args| {
            runs.fetch_add(1, Ordering::SeqCst);
            if args.get("fail").is_some() {
                return Err(ToolError::new("asked to fail"));
            }
            Ok(format!("ran with {args}").into())
        }))
        .unwrap();
    }
    (r, runs)
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall::new(name, args)
}

#[test]
fn denied_calls_never_run_the_body() {
    let (r, runs) = registry(&[(
        "w",
        r#"{"fs": {"read": ["/data/**"], "write": ["/out/**"]}}"#,
    )]);
    let mut inv = r.start_invocation();
    for args in [
        json!({"dest": "/data/x"}),
        json!({"dest": "/out/../etc/passwd"}),
        json!({"src": "/etc/shadow"}),
        json!({"nested": [{"p": "file:///root/.ssh/id_rsa"}]}),
        json!({"dest": "relative/no/cwd"}),
    ] {
        let res = inv.call_blocking(call("w", args.clone()));
        assert!(res.denial().is_some(), "{args}");
        assert!(res.content.starts_with("Denied:"), "{}", res.content);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(inv
        .call_blocking(call("w", json!({"dest": "/out/r.md", "src": "/data/a"})))
        .is_ok());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn forbidden() {
    let (r, runs) = registry(&[("f", r#"{"constraints": {"forbidden": true}}"#)]);
    let res = r.start_invocation().call_blocking(call("f", json!({})));
    assert_eq!(res.denial().unwrap().code, DenialCode::Forbidden);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let (r, _) = registry(&[("f", r#"{"constraints": {"forbidden": false}}"#)]);
    assert!(r
        .start_invocation()
        .call_blocking(call("f", json!({})))
        .is_ok());
}

#[test]
fn max_invocations_counts_runs_not_denials_and_resets_per_invocation() {
    let (r, runs) = registry(&[(
        "m",
        r#"{"fs": {"read": ["/d/**"]}, "constraints": {"max_invocations": 2}}"#,
    )]);
    let mut inv = r.start_invocation();
    assert!(inv.call_blocking(call("m", json!({"src": "/d/1"}))).is_ok());
    // A gate denial does not use up the budget.
    assert!(inv
        .call_blocking(call("m", json!({"src": "/etc/x"})))
        .denial()
        .is_some());
    // A failing body does.
    assert!(inv
        .call_blocking(call("m", json!({"src": "/d/2", "fail": 1})))
        .error()
        .is_some());
    let third = inv.call_blocking(call("m", json!({"src": "/d/3"})));
    assert_eq!(third.denial().unwrap().code, DenialCode::MaxInvocations);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    drop(inv);
    let mut fresh = r.start_invocation();
    assert!(fresh
        .call_blocking(call("m", json!({"src": "/d/4"})))
        .is_ok());
    // Zero means never.
    let (r, _) = registry(&[("z", r#"{"constraints": {"max_invocations": 0}}"#)]);
    let res = r.start_invocation().call_blocking(call("z", json!({})));
    assert_eq!(res.denial().unwrap().code, DenialCode::MaxInvocations);
}

#[test]
fn only_after_needs_a_successful_earlier_call_in_the_same_invocation() {
    let (r, _) = registry(&[
        ("fetch", "{}"),
        ("write", r#"{"constraints": {"only_after": ["fetch"]}}"#),
    ]);
    let mut inv = r.start_invocation();
    let early = inv.call_blocking(call("write", json!({})));
    assert_eq!(early.denial().unwrap().code, DenialCode::OnlyAfter);
    assert!(early.content.contains("`fetch`"));
    assert!(inv
        .call_blocking(call("fetch", json!({"fail": true})))
        .error()
        .is_some());
    assert!(
        inv.call_blocking(call("write", json!({})))
            .denial()
            .is_some(),
        "failed fetch does not count"
    );
    assert!(inv.call_blocking(call("fetch", json!({}))).is_ok());
    assert!(inv.call_blocking(call("write", json!({}))).is_ok());
    drop(inv);
    let mut next = r.start_invocation();
    assert!(
        next.call_blocking(call("write", json!({})))
            .denial()
            .is_some(),
        "nothing leaks across invocations"
    );
    // An empty list is no requirement.
    let (r, _) = registry(&[("w", r#"{"constraints": {"only_after": []}}"#)]);
    assert!(r
        .start_invocation()
        .call_blocking(call("w", json!({})))
        .is_ok());
}

struct Recorder {
    answer: Approval,
    seen: Mutex<Vec<String>>,
}

impl Approver for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn decide(&self, request: &ApprovalRequest<'_>) -> Approval {
        self.seen.lock().unwrap().push(format!(
            "{}:{}:{}",
            request.tool, request.risk, request.arguments
        ));
        self.answer.clone()
    }
}

#[test]
fn approval_is_required_and_fails_closed() {
    let (mut r, runs) = registry(&[
        ("a", r#"{"constraints": {"requires_approval": true}}"#),
        ("hi", r#"{"risk": "high"}"#),
        ("lo", r#"{"risk": "low"}"#),
    ]);
    let res = r.start_invocation().call_blocking(call("a", json!({})));
    assert_eq!(res.denial().unwrap().code, DenialCode::ApprovalDenied);
    assert!(res.content.contains("no approver"));
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let no = Arc::new(Recorder {
        answer: Approval::Deny("not today".into()),
        seen: Mutex::default(),
    });
    r.set_approver(no.clone()).require_approval_from(Risk::High);
    let mut inv = r.start_invocation();
    assert!(inv
        .call_blocking(call("hi", json!({"token": "sk-abcdefghijklmnopqrstuvwx"})))
        .denial()
        .is_some());
    assert!(
        inv.call_blocking(call("lo", json!({}))).is_ok(),
        "below the threshold"
    );
    let seen = no.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].starts_with("hi:high:"));
    assert!(
        !seen[0].contains("sk-abc"),
        "approver sees redacted arguments: {}",
        seen[0]
    );

    let yes = Arc::new(Recorder {
        answer: Approval::Approve,
        seen: Mutex::default(),
    });
    r.set_approver(yes);
    assert!(r
        .start_invocation()
        .call_blocking(call("a", json!({})))
        .is_ok());
}

#[test]
fn hooks_and_audit() {
    let (mut r, _) = registry(&[("t", r#"{"fs": {"read": ["/d/**"]}}"#)]);
    let executed = Arc::new(AtomicUsize::new(0));
    let denied = Arc::new(AtomicUsize::new(0));
    let (e, d) = (executed.clone(), denied.clone());
    r.on_executed(move |_| {
        e.fetch_add(1, Ordering::SeqCst);
    });
    r.on_denied(move |_| {
        d.fetch_add(1, Ordering::SeqCst);
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = Arc::new(JsonlSink::open(&path).unwrap());
    let memory = MemorySink::new();
    r.add_sink(sink.clone()).add_sink(Arc::new(memory.clone()));
    let mut inv = r.start_invocation();
    inv.call_blocking(call("t", json!({"src": "/d/a", "api_key": "hunter2"})));
    inv.call_blocking(call("t", json!({"src": "/etc/passwd"})));
    inv.call_blocking(call("nope", json!({})));
    inv.call_blocking(call("t", json!({"src": "/d/a", "fail": 1})));
    assert_eq!(executed.load(Ordering::SeqCst), 2, "executed + failed");
    assert_eq!(denied.load(Ordering::SeqCst), 2);
    assert!(sink.take_error().is_none());

    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "proposed", "executed", "proposed", "denied", "proposed", "denied", "proposed",
            "failed"
        ]
    );
    for line in &lines {
        assert_eq!(line["manifest_hash"], r.manifest_hash());
        assert_eq!(line["invocation"], inv.id());
    }
    assert_eq!(lines[0]["arguments"]["api_key"], "[REDACTED:secret-field]");
    assert_eq!(lines[3]["code"], "fs.path_not_allowed");
    assert_eq!(lines[3]["path"], "/etc/passwd");
    assert_eq!(lines[5]["code"], "tool.unknown");
    assert!(lines[1]["duration_us"].is_u64());
    assert_eq!(memory.events().len(), 8);
    assert_eq!(r.manifest_hash(), r.manifest().hash());
}

#[test]
fn bad_calls() {
    let (mut r, _) = registry(&[("t", "{}")]);
    let res = r
        .start_invocation()
        .call_blocking(call("t", json!(["not", "an", "object"])));
    assert_eq!(res.denial().unwrap().code, DenialCode::InvalidArguments);
    let res = r
        .start_invocation()
        .call_blocking(call("missing", json!({})));
    assert!(
        res.content.contains("Available tools: t"),
        "{}",
        res.content
    );
    let dup = r.register(fn_tool(
        ToolSpec::new("t", ToolPolicy::default()),
        |_, _| Ok("".into()),
    ));
    assert!(dup.is_err());
    let bad = r.register(fn_tool(
        ToolSpec::new("a b", ToolPolicy::default()),
        |_, _| Ok("".into()),
    ));
    assert!(bad.is_err());
}

#[test]
fn relative_typed_paths_resolve_against_the_registry_cwd() {
    let (mut r, _) = registry(&[("w", r#"{"fs": {"write": ["/srv/agent/out/**"]}}"#)]);
    r.set_cwd("/srv/agent");
    let mut inv = r.start_invocation();
    let ok = inv.call_blocking(call("w", json!({"dest": "out/r.md"})));
    assert!(
        ok.content.contains("/srv/agent/out/r.md"),
        "body sees the normalized path: {}",
        ok.content
    );
    assert!(inv
        .call_blocking(call("w", json!({"dest": "../etc/passwd"})))
        .denial()
        .is_some());
}

#[test]
fn tool_output_secrets_are_redacted_for_the_model() {
    let mut r = Registry::new();
    r.register(fn_tool(
        ToolSpec::new("leak", ToolPolicy::default()),
        |_, _| Ok("AWS key AKIAIOSFODNN7EXAMPLE found".into()),
    ))
    .unwrap();
    let res = r.start_invocation().call_blocking(call("leak", json!({})));
    assert_eq!(res.content, "AWS key [REDACTED:aws-access-key] found");
}
