//! The OpenTelemetry sink (feature `otel`) against an OTLP/HTTP receiver in this test
//! (`support::otlp`, which decodes the exported protobuf as a collector would): each call's
//! `execute_tool` span and its attributes.

use std::sync::Arc;

use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, status::StatusCode};
use policy_runtime::otel::{attr, OtelSink};
use policy_runtime::policy::ToolPolicy;
use policy_runtime::registry::{Registry, ToolCall};
use policy_runtime::tool::{fn_tool, Access, ToolError, ToolOutput, ToolSpec};
use serde_json::json;

mod support;
use support::otlp::{collector, string_attr};

/// A registry of one tool, `read_file` (reads under /data, twice per invocation), whose body
/// answers like a sandboxed run: its metadata holds the sandbox's report.
fn registry() -> Registry {
    let policy = ToolPolicy::from_json_str(
        "test",
        r#"{"fs": {"read": ["/data/**"]}, "net": "deny", "constraints": {"max_invocations": 2}}"#,
    )
    .unwrap();
    let mut registry = Registry::new();
    registry
        .register(fn_tool(
            ToolSpec::new("read_file", policy).path_arg("path", Access::Read),
            |_ctx, args| {
                if args["path"] == "/data/refused" {
                    return Err(ToolError::refused("this host cannot enforce net = deny"));
                }
                Ok(ToolOutput::from("contents").with_metadata(json!({
                    "exit_code": 0,
                    "sandbox": {
                        "profile": "strict",
                        "landlock_abi": 7,
                        "rules": [
                            {"rule": "fs.read /data/**", "declared": true, "status": "exact", "by": ["landlock"]},
                            {"rule": "net deny", "declared": true, "status": "widened", "to": "no network namespace", "by": ["netns"]},
                        ],
                    },
                })))
            },
        ))
        .unwrap();
    registry
}

#[test]
fn each_call_is_an_execute_tool_span_with_the_decision() {
    let otlp = collector();
    let mut registry = registry();
    let manifest = registry.manifest();
    let sink = Arc::new(OtelSink::otlp_http(&otlp.endpoint, "toolpolicy-test", &manifest).unwrap());
    registry.add_sink(sink.clone());
    let policy_hash = manifest.tools["read_file"].policy.hash();

    let mut run = registry.start_invocation();
    let allowed = run.call_blocking(ToolCall {
        id: Some("call-allowed".into()),
        name: "read_file".into(),
        arguments: json!({"path": "/data/a.csv"}),
    });
    assert!(allowed.is_ok());
    let denied = run.call_blocking(ToolCall {
        id: Some("call-denied".into()),
        name: "read_file".into(),
        arguments: json!({"path": "/data/../etc/passwd"}),
    });
    assert!(denied.denial().is_some());
    let refused = run.call_blocking(ToolCall {
        id: Some("call-refused".into()),
        name: "read_file".into(),
        arguments: json!({"path": "/data/refused"}),
    });
    assert!(refused.error().is_some());
    let over = run.call_blocking(ToolCall {
        id: Some("call-over".into()),
        name: "read_file".into(),
        arguments: json!({"path": "/data/b.csv"}),
    });
    assert_eq!(
        over.denial().map(|d| d.code.as_str()),
        Some("constraint.max_invocations")
    );
    sink.flush().expect("the receiver accepts the spans");

    let spans = otlp.spans(4, "toolpolicy-test");

    for span in spans.values() {
        assert_eq!(span.name, "execute_tool read_file");
        assert_eq!(span.kind, SpanKind::Internal as i32);
        assert_eq!(
            string_attr(span, attr::OPERATION_NAME),
            Some("execute_tool")
        );
        assert_eq!(string_attr(span, attr::TOOL_NAME), Some("read_file"));
        assert_eq!(
            string_attr(span, attr::MANIFEST_HASH),
            Some(registry.manifest_hash())
        );
        assert_eq!(
            string_attr(span, attr::POLICY_HASH),
            Some(policy_hash.as_str())
        );
        assert_eq!(string_attr(span, attr::INVOCATION_ID), Some(run.id()));
        assert!(span.end_time_unix_nano >= span.start_time_unix_nano);
    }

    let allowed = &spans["call-allowed"];
    assert_eq!(string_attr(allowed, attr::DECISION), Some("allow"));
    assert_eq!(string_attr(allowed, attr::ERROR_TYPE), None);
    assert_eq!(string_attr(allowed, attr::LAYER), None);
    assert_eq!(string_attr(allowed, attr::SANDBOX_PROFILE), Some("strict"));
    assert_eq!(
        string_attr(allowed, attr::SANDBOX_ENFORCEMENT),
        Some("widened"),
        "the weakest rule decides the level"
    );
    assert_ne!(
        allowed.status.as_ref().map(|s| s.code),
        Some(StatusCode::Error as i32)
    );

    let denied = &spans["call-denied"];
    assert_eq!(string_attr(denied, attr::DECISION), Some("deny"));
    assert_eq!(string_attr(denied, attr::LAYER), Some("path_gate"));
    assert_eq!(
        string_attr(denied, attr::DENIAL_CODE),
        Some("fs.path_not_allowed")
    );
    assert_eq!(
        string_attr(denied, attr::ERROR_TYPE),
        Some("fs.path_not_allowed")
    );
    assert_eq!(string_attr(denied, attr::SANDBOX_PROFILE), None);
    let status = denied.status.as_ref().unwrap();
    assert_eq!(status.code, StatusCode::Error as i32);
    assert!(status.message.contains("/etc/passwd"), "{}", status.message);

    let refused = &spans["call-refused"];
    assert_eq!(string_attr(refused, attr::DECISION), Some("deny"));
    assert_eq!(string_attr(refused, attr::LAYER), Some("sandbox"));
    assert_eq!(string_attr(refused, attr::ERROR_TYPE), Some("refused"));

    let over = &spans["call-over"];
    assert_eq!(string_attr(over, attr::LAYER), Some("constraints"));
    assert_eq!(
        string_attr(over, attr::DENIAL_CODE),
        Some("constraint.max_invocations")
    );
    sink.shutdown().unwrap();
}

#[test]
fn a_malformed_endpoint_is_an_error_that_names_it() {
    let err = OtelSink::otlp_http("not a url", "t", &registry().manifest()).unwrap_err();
    assert!(err.to_string().contains("not a url"), "{err}");
}

#[test]
fn an_unreachable_collector_is_reported_when_the_spans_are_flushed() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut registry = registry();
    let endpoint = format!("http://127.0.0.1:{port}/v1/traces");
    let sink = Arc::new(OtelSink::otlp_http(&endpoint, "t", &registry.manifest()).unwrap());
    registry.add_sink(sink.clone());
    let denied = registry
        .start_invocation()
        .call_blocking(ToolCall::new("read_file", json!({"path": "/etc/passwd"})));
    assert!(denied.denial().is_some());
    let err = sink.flush().expect_err("nothing received the span");
    assert!(
        err.to_string().starts_with("exporting the audit spans"),
        "{err}"
    );
}
