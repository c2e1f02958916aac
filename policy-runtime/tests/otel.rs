//! The OpenTelemetry sink (feature `otel`) against an OTLP/HTTP receiver in this test: a small
//! HTTP server on 127.0.0.1 that decodes the exported protobuf with the OpenTelemetry proto
//! types, as a collector would, and checks each call's `execute_tool` span.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, status::StatusCode, Span};
use policy_runtime::otel::{attr, OtelSink};
use policy_runtime::policy::ToolPolicy;
use policy_runtime::registry::{Registry, ToolCall};
use policy_runtime::tool::{fn_tool, Access, ToolError, ToolOutput, ToolSpec};
use prost::Message;
use serde_json::json;

/// Accepts OTLP/HTTP exports on an ephemeral port and sends every decoded request (with its
/// path and content type) to the test.
struct Collector {
    endpoint: String,
    requests: Receiver<(String, String, ExportTraceServiceRequest)>,
}

fn collector() -> Collector {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let (tx, requests) = mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let tx = tx.clone();
            std::thread::spawn(move || serve(conn, tx));
        }
    });
    Collector { endpoint, requests }
}

/// One HTTP/1.1 connection: requests with a Content-Length body, each answered 200.
fn serve(conn: TcpStream, tx: Sender<(String, String, ExportTraceServiceRequest)>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut conn = conn;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_string();
        let mut headers = HashMap::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        assert!(
            !headers.contains_key("transfer-encoding"),
            "this receiver reads Content-Length bodies only: {headers:?}"
        );
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let decoded =
            ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP trace request");
        let content_type = headers.get("content-type").cloned().unwrap_or_default();
        let _ = tx.send((path, content_type, decoded));
        conn.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        )
        .unwrap();
    }
}

fn string_attr<'s>(span: &'s Span, key: &str) -> Option<&'s str> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.as_str()),
            _ => None,
        })
}

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

    let mut spans: HashMap<String, Span> = HashMap::new();
    while spans.len() < 4 {
        let (path, content_type, request) = otlp
            .requests
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the exporter posts the spans");
        assert_eq!(path, "/v1/traces");
        assert_eq!(content_type, "application/x-protobuf");
        for resource in request.resource_spans {
            let service = resource
                .resource
                .as_ref()
                .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
                .and_then(|kv| kv.value.clone()?.value);
            assert_eq!(
                service,
                Some(AnyValue::StringValue("toolpolicy-test".into()))
            );
            for scope in resource.scope_spans {
                for span in scope.spans {
                    let id = string_attr(&span, attr::TOOL_CALL_ID).unwrap().to_string();
                    spans.insert(id, span);
                }
            }
        }
    }

    for span in spans.values() {
        assert_eq!(span.name, "execute_tool read_file");
        assert_eq!(span.kind, SpanKind::Internal as i32);
        assert_eq!(string_attr(span, attr::OPERATION_NAME), Some("execute_tool"));
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
