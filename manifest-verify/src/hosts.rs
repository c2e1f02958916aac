//! `net`: endpoint sets compared exactly, with a `host:port` witness.
//!
//! An unspecified `net` is **deny** ([`policy_runtime::reference::policy`]): the OS sandbox, the
//! only layer that enforces `net` at all (the in-process gate judges paths only), gives it that
//! meaning, and "unspecified → allow" is a widening ([`policy_runtime::reference::findings`]),
//! which only holds if unspecified is below allow. So deny ↔ unspecified is no change, and hosts/allow → unspecified is a
//! narrowing.
//!
//! Host patterns are judged with the runtime's own matcher ([`HostPattern::matches_name`]), so
//! the verifier and the sandbox cannot disagree about what a pattern admits. A `*.domain`
//! pattern is covered only by a pattern that admits a fresh name under it, which is exactly
//! `*.domain` itself or a `*.` pattern of a parent domain; names listed one by one never cover
//! it.

use policy_runtime::host::{HostMatch, HostPattern, PortMatch};
use policy_runtime::policy::{Stance, ToolPolicy};

use crate::findings::{Code, Finding};

/// The endpoints one side admits: the policy's effective `net` stance
/// ([`ToolPolicy::net_stance`]; unspecified, `deny` and an empty host list admit nothing).
pub type Endpoints<'a> = Stance<'a, HostPattern>;

fn admits(endpoints: &Endpoints<'_>, host: &str, port: u16) -> bool {
    endpoints.admits_any(|p| p.matches_name(host, port))
}

/// Ports tried first for witnesses, so that they read like real endpoints.
const PREFERRED_PORTS: [u16; 6] = [443, 80, 8080, 8443, 22, 53];

/// An endpoint (`host:port`) that `admitted` admits and `rejected` does not.
///
/// ```
/// use manifest_verify::hosts::endpoint_witness;
/// use policy_runtime::host::HostPattern;
/// use policy_runtime::policy::Stance;
///
/// let old: Vec<HostPattern> = vec!["api.example.com:443".parse().unwrap()];
/// let new: Vec<HostPattern> = vec!["*.example.com:443".parse().unwrap()];
/// let w = endpoint_witness(Stance::Only(&new), Stance::Only(&old));
/// assert_eq!(w.as_deref(), Some("www.example.com:443"));
/// assert_eq!(endpoint_witness(Stance::Only(&old), Stance::Only(&new)), None);
/// ```
pub fn endpoint_witness(admitted: Endpoints<'_>, rejected: Endpoints<'_>) -> Option<String> {
    match (admitted, rejected) {
        (Stance::Nothing, _) | (_, Stance::Anything) => None,
        (Stance::Anything, rejected) => {
            // Two-label names are never admitted by `*.` patterns (their suffix has at least
            // two labels) and each name pattern admits one name, so one of these is free.
            let count = match rejected {
                Stance::Only(h) => h.len(),
                _ => 0,
            };
            ["example.com", "example.net", "example.org"]
                .into_iter()
                .map(String::from)
                .chain((0..=count).map(|i| format!("host{i}.example")))
                .find_map(|host| free_port(&host, PortMatch::Any, &rejected))
        }
        (Stance::Only(patterns), rejected) => {
            patterns.iter().find_map(|p| pattern_witness(p, &rejected))
        }
    }
}

/// An endpoint admitted by `p` and not by `rejected`.
fn pattern_witness(p: &HostPattern, rejected: &Endpoints<'_>) -> Option<String> {
    match &p.host {
        HostMatch::Name(n) => free_port(n, p.port, rejected),
        HostMatch::Ip(ip) => free_port(&ip.to_string(), p.port, rejected),
        HostMatch::Subdomains(suffix) => {
            // Only a listed name can make one fresh label differ from another.
            let listed = match rejected {
                Stance::Only(h) => h.len(),
                _ => 0,
            };
            ["www", "api"]
                .into_iter()
                .map(String::from)
                .chain((0..=listed).map(|i| format!("h{i}")))
                .map(|label| format!("{label}.{suffix}"))
                .filter(|name| name.len() <= 253)
                .find_map(|name| free_port(&name, p.port, rejected))
        }
    }
}

/// `host:port` for the first port of `ports` that `rejected` does not admit for `host`.
fn free_port(host: &str, ports: PortMatch, rejected: &Endpoints<'_>) -> Option<String> {
    let port = match ports {
        PortMatch::Port(port) => (!admits(rejected, host, port)).then_some(port),
        PortMatch::Any => PREFERRED_PORTS
            .into_iter()
            .chain(1..=u16::MAX)
            .find(|&port| !admits(rejected, host, port)),
    }?;
    Some(if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    })
}

/// Widening and narrowing findings of `net`.
pub fn diff(tool: &str, old: &ToolPolicy, new: &ToolPolicy) -> Vec<Finding> {
    let (o, n) = (old.net_stance(), new.net_stance());
    let text = |p: &ToolPolicy| {
        p.net
            .as_ref()
            .map(|n| serde_json::to_string(n).expect("serializes"))
    };
    let make = |code, message: String, witness: String| Finding {
        code,
        tool: tool.to_string(),
        path: format!("tools.{tool}.net"),
        message,
        witness: Some(witness),
        old: text(old),
        new: text(new),
    };
    let mut out = Vec::new();
    if let Some(w) = endpoint_witness(n, o) {
        let why = match n {
            Stance::Anything => "net is now \"allow\"".to_string(),
            _ => explain(&n, &w),
        };
        out.push(make(
            Code::NetWidened,
            format!(
                "`{tool}` may now connect to `{w}` ({why}), which the old policy did not allow"
            ),
            w,
        ));
    }
    if let Some(w) = endpoint_witness(o, n) {
        out.push(make(
            Code::NetNarrowed,
            format!("`{tool}` may no longer connect to `{w}`"),
            w,
        ));
    }
    out
}

fn explain(endpoints: &Endpoints<'_>, witness: &str) -> String {
    let Stance::Only(patterns) = endpoints else {
        return String::new();
    };
    let (host, port) = witness
        .rsplit_once(':')
        .map(|(h, p)| (h.trim_start_matches('[').trim_end_matches(']'), p))
        .unwrap_or((witness, "0"));
    let port: u16 = port.parse().unwrap_or(0);
    patterns
        .iter()
        .find(|p| p.matches_name(host, port))
        .map_or_else(String::new, |p| format!("admitted by `{p}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[&str]) -> Vec<HostPattern> {
        list.iter().map(|h| h.parse().unwrap()).collect()
    }

    fn w(new: &[&str], old: &[&str]) -> Option<String> {
        let (n, o) = (hosts(new), hosts(old));
        endpoint_witness(Stance::Only(&n), Stance::Only(&o))
    }

    #[test]
    fn inclusion_cases() {
        assert_eq!(w(&["a.example.com:443"], &["*.example.com:443"]), None);
        assert_eq!(w(&["a.b.example.com:443"], &["*.example.com:*"]), None);
        assert_eq!(w(&["*.b.example.com:443"], &["*.example.com:443"]), None);
        assert_eq!(
            w(&["*.example.com:443"], &["*.b.example.com:443"]).as_deref(),
            Some("www.example.com:443")
        );
        assert_eq!(
            w(&["*.example.com:443"], &["www.example.com:443"]).as_deref(),
            Some("api.example.com:443")
        );
        assert_eq!(
            w(&["example.com:*"], &["example.com:443"]).as_deref(),
            Some("example.com:80")
        );
        assert_eq!(
            w(&["example.com:443"], &["*.example.com:443"]).as_deref(),
            Some("example.com:443")
        );
        assert_eq!(
            w(&["[::1]:80"], &["127.0.0.1:80"]).as_deref(),
            Some("[::1]:80")
        );
        assert_eq!(w(&["127.0.0.1:80"], &["127.0.0.1:*"]), None);
    }

    #[test]
    fn allow_against_a_list_finds_a_free_name() {
        let o = hosts(&[
            "example.com:*",
            "example.net:*",
            "example.org:*",
            "host0.example:*",
        ]);
        let w = endpoint_witness(Stance::Anything, Stance::Only(&o)).unwrap();
        assert_eq!(w, "host1.example:443");
        assert_eq!(endpoint_witness(Stance::Anything, Stance::Anything), None);
        assert_eq!(endpoint_witness(Stance::Only(&o), Stance::Anything), None);
    }
}
