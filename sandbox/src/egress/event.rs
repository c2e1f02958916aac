//! Audit events: one per connection attempt and one per name lookup.

use serde::Serialize;

/// What the broker decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// The attempt matched an allowed `host:port` and the broker carried it (or tried to: see
    /// [`EgressEvent::error`]).
    Allowed,
    /// The attempt matched nothing that the policy allows.
    Denied,
}

/// What kind of attempt an event records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// A TCP connection to one of the sandbox's endpoints.
    Connect,
    /// A DNS question sent to the sandbox's resolver.
    Dns,
}

/// One audit record from the egress broker.
///
/// A `connect` event is emitted when the connection ends, so it carries the byte counts. A `dns`
/// event is emitted when the question is answered.
///
/// ```
/// use sandbox::egress::{Decision, EgressEvent, EventKind};
///
/// let e = EgressEvent {
///     decision: Decision::Denied,
///     kind: EventKind::Dns,
///     host: "exfil.example.net".into(),
///     port: 53,
///     upstream: None,
///     bytes_up: 0,
///     bytes_down: 0,
///     duration_ms: 0,
///     error: Some("name not allowed: NXDOMAIN".into()),
/// };
/// let json = serde_json::to_string(&e).unwrap();
/// assert!(json.contains(r#""decision":"denied""#));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EgressEvent {
    /// Allowed or denied.
    pub decision: Decision,
    /// Connection or name lookup.
    pub kind: EventKind,
    /// The host name the tool asked for (or the address it dialled when no name applies).
    pub host: String,
    /// The port the tool dialled (53 for lookups).
    pub port: u16,
    /// The real address the broker connected to, when it got that far.
    pub upstream: Option<String>,
    /// Bytes from the tool to the upstream server.
    pub bytes_up: u64,
    /// Bytes from the upstream server to the tool.
    pub bytes_down: u64,
    /// Wall time from accept to close, in milliseconds.
    pub duration_ms: u64,
    /// Why the attempt was denied or failed, if it was.
    pub error: Option<String>,
}
