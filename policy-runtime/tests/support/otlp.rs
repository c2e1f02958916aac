//! An OTLP/HTTP receiver for tests: a small HTTP server on 127.0.0.1 (an ephemeral port) that
//! decodes each export with the OpenTelemetry proto types, as a collector would. Shared by the
//! OpenTelemetry tests of policy-runtime and of the examples (included with `#[path]`).

#![allow(dead_code)] // each includer uses part of it

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
pub use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// Accepts OTLP/HTTP exports on an ephemeral port and sends every decoded request (with its
/// path and content type) to the test.
pub struct Collector {
    /// The URL to export to (`http://127.0.0.1:PORT/v1/traces`).
    pub endpoint: String,
    /// Every request: its path, its content type and the decoded export.
    pub requests: Receiver<(String, String, ExportTraceServiceRequest)>,
}

/// A receiver listening on 127.0.0.1 (a port of its own), served from background threads.
pub fn collector() -> Collector {
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

impl Collector {
    /// The spans received until `count` have arrived, keyed by their `gen_ai.tool.call.id`,
    /// each from a resource named `service` (`service.name`).
    pub fn spans(&self, count: usize, service: &str) -> HashMap<String, Span> {
        let mut spans = HashMap::new();
        while spans.len() < count {
            let (path, content_type, request) = self
                .requests
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("{} of {count} spans arrived: {e}", spans.len()));
            assert_eq!(path, "/v1/traces");
            assert_eq!(content_type, "application/x-protobuf");
            for resource in request.resource_spans {
                let name = resource
                    .resource
                    .as_ref()
                    .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
                    .and_then(|kv| kv.value.clone()?.value);
                assert_eq!(name, Some(AnyValue::StringValue(service.into())));
                for scope in resource.scope_spans {
                    for span in scope.spans {
                        let id = string_attr(&span, "gen_ai.tool.call.id")
                            .expect("a call id")
                            .to_string();
                        spans.insert(id, span);
                    }
                }
            }
        }
        spans
    }
}

/// The string value of a span's attribute.
pub fn string_attr<'s>(span: &'s Span, key: &str) -> Option<&'s str> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.as_str()),
            _ => None,
        })
}
