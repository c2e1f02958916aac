//! Host-pinned egress: `net = {hosts = ["api.example.com:443"]}` reaches that endpoint and
//! nothing else.
//!
//! # How it works
//!
//! The tool runs in an empty network namespace: only `lo`, no route out. Inside it, every
//! allowed host gets a loopback address of its own (127.0.0.2, 127.0.0.3, ...), and
//! `/etc/hosts` maps the name there ([`EgressPlan::files`]). Before the tool starts, the
//! sandbox's child calls [`bind_inside`], which creates a listening socket for each allowed
//! `address:port` (plus a DNS responder on 127.0.0.1:53) *inside* the namespace and passes them
//! over a unix socket to the parent. There [`start_broker`] accepts on them from the host's
//! namespace (a socket keeps the namespace it was made in), resolves the real host with the
//! host's resolver at every connect, connects, and relays the bytes both ways without looking
//! at them (one pooled thread per direction, 256 KiB reads; the sandbox's `lo` carries 512 KiB
//! segments where the kernel allows). TLS stays end to end: the broker never sees plaintext,
//! and the tool verifies the real server's certificate for the real name.
//!
//! # What each form guarantees
//!
//! - **`name:port`** — connections to `name:port` reach the host's current answer for `name`
//!   on exactly `port`. The tool cannot choose another address or port: the broker's target is
//!   fixed by the plan. Another port of the same name, or any unlisted address, is refused by the
//!   kernel (`ECONNREFUSED`) or has no route (`ENETUNREACH`), at once. By default a name whose
//!   host-side answer is loopback, link-local or unspecified is refused (DNS rebinding guard,
//!   [`BrokerOptions::allow_host_local`]).
//! - **`*.domain:port`** — any name under `domain` (not `domain` itself), up to
//!   [`WILDCARD_POOL`] distinct names per sandbox: the sandbox's DNS hands each new name an
//!   address from a pool, and the broker connects to that name. Because the tool picks the
//!   label, the *name itself* reaches the host's resolver and so the domain's DNS operator:
//!   grant a wildcard only to a domain you would let the tool talk to anyway. An unused pool
//!   address is refused with a reset and a denied event.
//! - **`ip:port`** — the literal address, reachable at that same address inside the sandbox
//!   (non-loopback literals are added to `lo`). No name resolution is involved.
//! - **`host:*`** (any port) gets no pinned listener: it is reachable only through the
//!   proxy below. Programs that ignore proxies cannot reach it (narrower, never wider).
//! - **HTTP CONNECT proxy** at [`PROXY_ADDR`] (127.0.0.1:3128; [`EgressPlan::proxy_env`]
//!   names the variables that point clients at it): each `CONNECT host:port` is checked
//!   against the patterns ([`EgressPlan::admits`]); allowed ones are resolved and connected by
//!   the broker exactly like pinned endpoints (same rebinding guard) and answered `200`, others
//!   get `403` (denied event) or `502` (upstream failure, with the reason). Wildcards through
//!   the proxy have no pool limit. Only tunnels: plain `GET http://...` proxying is refused
//!   with `400`.
//! - **DNS** — the sandbox's resolver answers `A` for allowed names only, with no data for
//!   other record types, `NXDOMAIN` for anything else and `REFUSED` when a wildcard pool is
//!   used up. It never forwards a question, so lookups cannot carry data out.
//! - **UDP, IPv6, ICMP, raw IPs** — there is no route out of the namespace: only TCP to the
//!   listed endpoints leaves it. An IPv6 literal endpoint (`[2001:db8::1]:443`) is the only way
//!   IPv6 works.
//!
//! An allowed connection whose upstream cannot be reached is reset right after connecting (the
//! tool sees `ECONNRESET`, or a failed connect when the reset lands first) and reported with the
//! reason. Every connection that reaches a listener, every proxy request and every DNS question
//! is an [`EgressEvent`]. Attempts refused before reaching the broker produce no event: ports
//! outside [`EgressPlan::connect_ports`] (Landlock: `EACCES`), addresses with no listener
//! (`ECONNREFUSED`) and addresses with no route (`ENETUNREACH`); none of them leaves the
//! sandbox.
//!
//! # Order in the sandbox's child
//!
//! clone into new user, net, ... namespaces → maps → `lo` up → [`bind_inside`] (needs `CAP_NET_BIND_SERVICE`
//! for ports below 1024 and `CAP_NET_ADMIN` for non-loopback literals) → mount
//! [`EgressPlan::files`] read-only over `/etc/...` → drop capabilities → Landlock (allow
//! [`EgressPlan::connect_ports`]) → seccomp → exec. The parent calls [`start_broker`] after
//! spawning, having closed its copy of the child's end of the channel.

mod broker;
mod dns;
mod error;
mod event;
mod inside;
mod plan;
mod pool;
mod proxy;
mod pump;

pub use broker::{
    refuses_for_names, start_broker, start_broker_with, BrokerHandle, BrokerOptions, EventSink,
    Resolver,
};
pub use error::EgressError;
pub use event::{Decision, EgressEvent, EventKind};
pub use inside::bind_inside;
pub use plan::{
    EgressPlan, Endpoint, ListenerKind, ListenerSpec, Route, DNS_ADDR, MAX_LISTENERS, PROXY_ADDR,
    WILDCARD_POOL,
};
