//! Why an egress plan could not be built.

use policy_runtime::HostPattern;

/// A `net = {hosts = [...]}` list that egress cannot enforce exactly.
///
/// Every variant names the offending pattern and says what to write instead. The runner refuses
/// the policy (exit 125, `refused: ...`) rather than widening it.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// `host:*` would need a listener on every port.
    #[error(
        "egress cannot pin `{pattern}`: any-port patterns would need a listener on all 65535 ports \
         inside the sandbox; list the ports the tool needs instead (e.g. `{example}`)"
    )]
    AnyPort {
        /// The pattern as written.
        pattern: HostPattern,
        /// A suggested replacement.
        example: String,
    },
    /// The pattern claims the address and port of the sandbox's own DNS responder.
    #[error(
        "egress cannot pin `{pattern}`: 127.0.0.1:53 inside the sandbox is its DNS responder, \
         which answers only the allowed names; remove the pattern"
    )]
    ReservedDns {
        /// The pattern as written.
        pattern: HostPattern,
    },
    /// More names or addresses than the loopback range can hold.
    #[error("egress ran out of loopback addresses after {allocated} endpoints; list fewer hosts")]
    OutOfAddresses {
        /// How many addresses were handed out.
        allocated: usize,
    },
    /// More listening sockets than a sandbox should hold.
    #[error(
        "egress would need {needed} listening sockets (limit {limit}); list fewer hosts, ports or \
         wildcard patterns"
    )]
    TooManyListeners {
        /// Sockets the plan asked for.
        needed: usize,
        /// The limit.
        limit: usize,
    },
}
