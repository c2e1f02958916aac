//! The audit as OpenTelemetry spans (feature `otel`), for the tracing back ends users already
//! run. The JSONL file of [`crate::audit::JsonlSink`] stays the embedded default.
//!
//! [`OtelSink`] is an [`EventSink`]: each call becomes one `execute_tool` span as the GenAI
//! semantic conventions describe it (name `execute_tool {tool}`, kind internal,
//! `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, and `error.type` when the
//! call was refused or failed), from the call's `proposed` event to its last one. The span also
//! carries what toolpolicy decided, under the `toolpolicy.` names of [`attr`]: the decision, the
//! refusing layer and denial code, the manifest and policy hashes, and for a sandboxed run the
//! sandbox profile and the weakest enforcement among its rules. [`OtelSink::otlp_http`] exports
//! over OTLP/HTTP (protobuf); [`OtelSink::new`] takes any tracer provider.
//!
//! Spans leave in batches from a background thread, so a call never waits for the network;
//! [`OtelSink::flush`] and [`OtelSink::shutdown`] report an export that fails (an unreachable
//! collector, for one). The JSONL file stays the record that does not depend on a collector.
//!
//! ```no_run
//! use std::sync::Arc;
//! use policy_runtime::otel::OtelSink;
//! use policy_runtime::Registry;
//!
//! let mut registry = Registry::new();
//! // ... register the tools ...
//! let spans = Arc::new(OtelSink::otlp_http("http://localhost:4318/v1/traces", "my-agent", &registry.manifest())?);
//! registry.add_sink(spans.clone());
//! // ... run calls; at exit:
//! spans.shutdown()?;
//! # Ok::<(), policy_runtime::otel::OtelError>(())
//! ```

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use opentelemetry::trace::{Span as _, SpanKind, Status, Tracer as _, TracerProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use serde_json::Value;

use crate::audit::EventSink;
use crate::denial::Layer;
use crate::event::{Event, EventKind};
use crate::manifest::Manifest;
use crate::tool::ToolErrorKind;

/// The attribute names of an `execute_tool` span.
pub mod attr {
    /// GenAI semantic conventions: always `execute_tool`.
    pub const OPERATION_NAME: &str = "gen_ai.operation.name";
    /// GenAI semantic conventions: the tool's name.
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    /// GenAI semantic conventions: the call's id.
    pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
    /// The class of error the call ended with: the denial code (`fs.path_not_allowed`, ...) of
    /// a refused call, the tool error's kind (`failed`, `invalid_arguments`, `refused`) of a
    /// failed one; absent when the call succeeded.
    pub const ERROR_TYPE: &str = "error.type";
    /// `allow` (the body ran) or `deny` (it did not: a layer refused the call).
    pub const DECISION: &str = "toolpolicy.decision";
    /// The layer that refused (`registry`, `path_gate`, `constraints`, `approval`, `sandbox`):
    /// see [`crate::denial::Layer`].
    pub const LAYER: &str = "toolpolicy.layer";
    /// The denial code of a refused call.
    pub const DENIAL_CODE: &str = "toolpolicy.denial.code";
    /// The hash of the manifest in force ([`crate::Manifest::hash`]).
    pub const MANIFEST_HASH: &str = "toolpolicy.manifest.hash";
    /// The hash of the tool's policy ([`crate::ToolPolicy::hash`]); absent for an unknown tool.
    pub const POLICY_HASH: &str = "toolpolicy.policy.hash";
    /// The sandbox profile a subprocess tool ran under (`strict`, `hardened`, ...).
    pub const SANDBOX_PROFILE: &str = "toolpolicy.sandbox.profile";
    /// The weakest enforcement among the sandbox's rules: `exact`, `widened` or
    /// `not_enforced`.
    pub const SANDBOX_ENFORCEMENT: &str = "toolpolicy.sandbox.enforcement";
    /// The agent invocation the call belongs to.
    pub const INVOCATION_ID: &str = "toolpolicy.invocation.id";
    /// The approval hook that approved the call, when one did.
    pub const APPROVER: &str = "toolpolicy.approver";
}

/// Why the OpenTelemetry sink could not be set up or could not deliver its spans.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    /// The OTLP exporter could not be built (e.g. a malformed endpoint).
    #[error("setting up the OTLP export to {endpoint}: {source}")]
    Exporter {
        /// The endpoint given.
        endpoint: String,
        /// What the exporter said.
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// Pending spans could not be exported (the collector is unreachable, refused them, ...).
    #[error("exporting the audit spans: {0}")]
    Export(#[from] opentelemetry_sdk::error::OTelSdkError),
}

/// What the sink knows of a call between its first event and its last.
struct Pending {
    start: SystemTime,
    approver: Option<String>,
}

/// An [`EventSink`] that turns each call into an `execute_tool` span (see the module docs).
pub struct OtelSink {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    policy_hashes: HashMap<String, String>,
    pending: Mutex<HashMap<(String, String), Pending>>,
}

impl std::fmt::Debug for OtelSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelSink")
            .field("tools", &self.policy_hashes.len())
            .finish_non_exhaustive()
    }
}

impl OtelSink {
    /// Spans of the tools of `manifest` (for their policy hashes), made by `provider`.
    pub fn new(provider: SdkTracerProvider, manifest: &Manifest) -> OtelSink {
        let tracer = provider.tracer("toolpolicy");
        OtelSink {
            provider,
            tracer,
            policy_hashes: manifest
                .tools
                .iter()
                .map(|(name, entry)| (name.clone(), entry.policy.hash()))
                .collect(),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// Spans exported over OTLP/HTTP in protobuf to `endpoint`, used as given (a collector's
    /// is `http://HOST:4318/v1/traces`), in batches from a background thread, under the
    /// resource `service.name = service_name`.
    pub fn otlp_http(
        endpoint: &str,
        service_name: &str,
        manifest: &Manifest,
    ) -> Result<OtelSink, OtelError> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .build()
            .map_err(|source| OtelError::Exporter {
                endpoint: endpoint.to_string(),
                source,
            })?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(
                Resource::builder()
                    .with_service_name(service_name.to_string())
                    .build(),
            )
            .build();
        Ok(OtelSink::new(provider, manifest))
    }

    /// Exports every span ended so far, waiting for the export.
    pub fn flush(&self) -> Result<(), OtelError> {
        Ok(self.provider.force_flush()?)
    }

    /// Exports what is pending and stops the exporter; later calls make no spans.
    pub fn shutdown(&self) -> Result<(), OtelError> {
        Ok(self.provider.shutdown()?)
    }

    fn end(&self, event: &Event, pending: Option<Pending>) {
        let start = pending.as_ref().map_or_else(SystemTime::now, |p| p.start);
        let mut attributes = vec![
            KeyValue::new(attr::OPERATION_NAME, "execute_tool"),
            KeyValue::new(attr::TOOL_NAME, event.tool.clone()),
            KeyValue::new(attr::TOOL_CALL_ID, event.call_id.clone()),
            KeyValue::new(attr::INVOCATION_ID, event.invocation.clone()),
            KeyValue::new(attr::MANIFEST_HASH, event.manifest_hash.clone()),
        ];
        if let Some(hash) = self.policy_hashes.get(&event.tool) {
            attributes.push(KeyValue::new(attr::POLICY_HASH, hash.clone()));
        }
        if let Some(approver) = pending.and_then(|p| p.approver) {
            attributes.push(KeyValue::new(attr::APPROVER, approver));
        }
        let mut status = Status::Unset;
        match &event.kind {
            EventKind::Denied { code, reason, .. } => {
                attributes.extend([
                    KeyValue::new(attr::DECISION, "deny"),
                    KeyValue::new(attr::LAYER, code.layer().as_str()),
                    KeyValue::new(attr::DENIAL_CODE, code.as_str()),
                    KeyValue::new(attr::ERROR_TYPE, code.as_str()),
                ]);
                status = Status::error(reason.clone());
            }
            EventKind::Executed { metadata, .. } => {
                attributes.push(KeyValue::new(attr::DECISION, "allow"));
                attributes.extend(sandbox_attributes(metadata.as_ref()));
            }
            EventKind::Failed { kind, error, .. } => {
                if *kind == ToolErrorKind::Refused {
                    // The sandbox would not start a tool whose policy this host cannot enforce.
                    attributes.push(KeyValue::new(attr::DECISION, "deny"));
                    attributes.push(KeyValue::new(attr::LAYER, Layer::Sandbox.as_str()));
                } else {
                    attributes.push(KeyValue::new(attr::DECISION, "allow"));
                }
                attributes.push(KeyValue::new(attr::ERROR_TYPE, kind.as_str()));
                status = Status::error(error.clone());
            }
            EventKind::Proposed { .. } | EventKind::Approved { .. } => return,
        }
        let mut span = self
            .tracer
            .span_builder(format!("execute_tool {}", event.tool))
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(attributes)
            .start(&self.tracer);
        span.set_status(status);
        span.end_with_timestamp(SystemTime::now());
    }
}

/// The profile and the weakest rule enforcement of a sandbox report in a call's metadata.
fn sandbox_attributes(metadata: Option<&Value>) -> Vec<KeyValue> {
    let Some(sandbox) = metadata.and_then(|m| m.get("sandbox")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(profile) = sandbox.get("profile").and_then(Value::as_str) {
        out.push(KeyValue::new(attr::SANDBOX_PROFILE, profile.to_string()));
    }
    let rank = |status: &str| match status {
        "exact" => 0,
        "widened" => 1,
        _ => 2,
    };
    let weakest = sandbox
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|rule| rule.get("status").and_then(Value::as_str))
        .max_by_key(|status| rank(status));
    if let Some(status) = weakest {
        let level = match rank(status) {
            0 => "exact",
            1 => "widened",
            _ => "not_enforced",
        };
        out.push(KeyValue::new(attr::SANDBOX_ENFORCEMENT, level));
    }
    out
}

impl EventSink for OtelSink {
    fn record(&self, event: &Event) {
        let key = (event.invocation.clone(), event.call_id.clone());
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        match &event.kind {
            EventKind::Proposed { .. } => {
                pending.insert(
                    key,
                    Pending {
                        start: SystemTime::now(),
                        approver: None,
                    },
                );
            }
            EventKind::Approved { approver } => {
                if let Some(p) = pending.get_mut(&key) {
                    p.approver = Some(approver.clone());
                }
            }
            EventKind::Denied { .. } | EventKind::Executed { .. } | EventKind::Failed { .. } => {
                let call = pending.remove(&key);
                drop(pending);
                self.end(event, call);
            }
        }
    }
}
