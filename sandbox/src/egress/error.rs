//! Why an egress plan could not be built.

use policy_runtime::HostPattern;

/// A `net = {hosts = [...]}` list that egress cannot enforce exactly.
///
/// Every variant names the offending pattern and says what to write instead. The runner refuses
/// the policy (exit 125, `refused: ...`) rather than widening it.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// The pattern claims an address and port the sandbox uses itself.
    #[error(
        "egress cannot pin `{pattern}`: that address and port inside the sandbox is its {what}; \
         remove the pattern"
    )]
    Reserved {
        /// The pattern as written.
        pattern: HostPattern,
        /// What lives there.
        what: &'static str,
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
