//! The egress plan: which loopback address and port inside the sandbox stands for which allowed
//! `host:port`, and the resolver files that make names point there.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use policy_runtime::host::{HostMatch, PortMatch};
use policy_runtime::HostPattern;
use serde::{Deserialize, Serialize};

use super::error::EgressError;

/// How many names one `*.domain` pattern can hand out addresses to.
pub const WILDCARD_POOL: usize = 16;

/// The most listening sockets one plan may ask for.
pub const MAX_LISTENERS: usize = 1024;

/// Address and port of the DNS responder inside the sandbox.
pub const DNS_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 53);

/// Address and port of the HTTP CONNECT proxy inside the sandbox.
pub const PROXY_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 3128);

/// Where an endpoint's connections go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// One DNS name, resolved by the broker on the host at every connect.
    Name(String),
    /// One slot of a `*.suffix` pool: the name is the one the DNS responder handed this address
    /// to, and none until then.
    Wildcard(String),
    /// An IP address written literally in the policy.
    Ip(IpAddr),
}

/// One address inside the sandbox and the ports it listens on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Where connections go.
    pub route: Route,
    /// The address inside the sandbox's network namespace.
    pub addr: IpAddr,
    /// The allowed ports, sorted.
    pub ports: Vec<u16>,
}

impl Endpoint {
    /// Whether `addr` is not configured on `lo` in a fresh network namespace and must be added
    /// before anything can bind it (IP literals outside 127.0.0.0/8 and `::1`).
    pub fn needs_local_addr(&self) -> bool {
        !self.addr.is_loopback()
    }
}

/// What one listening socket inside the sandbox is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListenerKind {
    /// TCP for endpoint number `endpoint` of [`EgressPlan::endpoints`].
    Tcp {
        /// Index into the endpoints.
        endpoint: usize,
    },
    /// The DNS responder, over UDP.
    DnsUdp,
    /// The DNS responder, over TCP.
    DnsTcp,
    /// The HTTP CONNECT proxy for clients that honour `HTTPS_PROXY`.
    Proxy,
}

/// One socket that [`bind_inside`](super::bind_inside) creates inside the sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerSpec {
    /// Address and port it is bound to.
    pub addr: SocketAddr,
    /// What it serves.
    pub kind: ListenerKind,
}

/// How a policy's `net = {hosts = [...]}` list is carried out.
///
/// Built once per policy; plain data, part of the runner's spawn request.
///
/// ```
/// use sandbox::egress::EgressPlan;
/// use policy_runtime::HostPattern;
///
/// let hosts: Vec<HostPattern> = vec!["api.example.com:443".parse()?, "api.example.com:80".parse()?];
/// let plan = EgressPlan::new(&hosts).unwrap();
/// assert_eq!(plan.connect_ports(), vec![53, 80, 443, 3128]);
/// assert!(plan.hosts_file().contains("127.0.0.2 api.example.com"));
/// # Ok::<(), policy_runtime::host::HostError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressPlan {
    patterns: Vec<HostPattern>,
    endpoints: Vec<Endpoint>,
    listeners: Vec<ListenerSpec>,
}

/// Hands out 127.0.0.2, 127.0.0.3, ... skipping addresses the policy names literally and
/// addresses ending in .0 or .255.
struct Allocator {
    next: u32,
    taken: BTreeSet<IpAddr>,
    allocated: usize,
}

impl Allocator {
    fn take(&mut self) -> Result<IpAddr, EgressError> {
        loop {
            let candidate = Ipv4Addr::from(self.next);
            if self.next >= u32::from(Ipv4Addr::new(127, 255, 255, 254)) {
                return Err(EgressError::OutOfAddresses {
                    allocated: self.allocated,
                });
            }
            self.next += 1;
            let last = candidate.octets()[3];
            if last == 0 || last == 255 || !self.taken.insert(IpAddr::V4(candidate)) {
                continue;
            }
            self.allocated += 1;
            return Ok(IpAddr::V4(candidate));
        }
    }
}

impl EgressPlan {
    /// Plans the endpoints of an allow-list.
    ///
    /// - `name:port`: one loopback address per name, with a listener for each allowed port.
    /// - `*.suffix:port`: a pool of [`WILDCARD_POOL`] addresses that the DNS responder hands to
    ///   matching names on first lookup; an exact name under the suffix also gets its ports.
    /// - `ip:port`: a listener on that very address (added to `lo` if it is not loopback), so
    ///   programs that dial the literal address reach it.
    ///
    /// - `host:*`: no listener (a port cannot be pinned); reachable only through the CONNECT
    ///   proxy at [`PROXY_ADDR`], which checks every request against the patterns.
    ///
    /// Fails for `127.0.0.1:53` and `127.0.0.1:3128`, which are the sandbox's own DNS responder
    /// and proxy.
    pub fn new(hosts: &[HostPattern]) -> Result<EgressPlan, EgressError> {
        let mut names: BTreeMap<String, BTreeSet<u16>> = BTreeMap::new();
        let mut suffixes: BTreeMap<String, BTreeSet<u16>> = BTreeMap::new();
        let mut ips: BTreeMap<IpAddr, BTreeSet<u16>> = BTreeMap::new();
        for pattern in hosts {
            let port = match pattern.port {
                PortMatch::Port(p) => p,
                // Any-port patterns cannot get a listener per port; they are served by the
                // proxy alone (checked there per CONNECT).
                PortMatch::Any => continue,
            };
            match &pattern.host {
                HostMatch::Name(n) => names.entry(n.clone()).or_default().insert(port),
                HostMatch::Subdomains(s) => suffixes.entry(s.clone()).or_default().insert(port),
                HostMatch::Ip(ip) => {
                    let addr = SocketAddr::new(*ip, port);
                    if addr == DNS_ADDR || addr == PROXY_ADDR {
                        return Err(EgressError::Reserved {
                            pattern: pattern.clone(),
                            what: if addr == DNS_ADDR {
                                "DNS responder"
                            } else {
                                "CONNECT proxy"
                            },
                        });
                    }
                    ips.entry(*ip).or_default().insert(port)
                }
            };
        }
        // An exact name under a wildcard suffix gets an address of its own, so it must also
        // listen on the wildcard's ports.
        for (name, ports) in names.iter_mut() {
            for (suffix, wild_ports) in &suffixes {
                let probe = HostPattern {
                    host: HostMatch::Subdomains(suffix.clone()),
                    port: PortMatch::Any,
                };
                if probe.matches_name(name, 1) {
                    ports.extend(wild_ports);
                }
            }
        }

        let mut alloc = Allocator {
            next: u32::from(Ipv4Addr::new(127, 0, 0, 2)),
            taken: ips.keys().copied().collect(),
            allocated: 0,
        };
        let mut endpoints = Vec::new();
        for (ip, ports) in ips {
            endpoints.push(Endpoint {
                route: Route::Ip(ip),
                addr: ip,
                ports: ports.into_iter().collect(),
            });
        }
        for (name, ports) in names {
            endpoints.push(Endpoint {
                route: Route::Name(name),
                addr: alloc.take()?,
                ports: ports.into_iter().collect(),
            });
        }
        for (suffix, ports) in suffixes {
            for _ in 0..WILDCARD_POOL {
                endpoints.push(Endpoint {
                    route: Route::Wildcard(suffix.clone()),
                    addr: alloc.take()?,
                    ports: ports.iter().copied().collect(),
                });
            }
        }

        let mut listeners = vec![
            ListenerSpec {
                addr: DNS_ADDR,
                kind: ListenerKind::DnsUdp,
            },
            ListenerSpec {
                addr: DNS_ADDR,
                kind: ListenerKind::DnsTcp,
            },
            ListenerSpec {
                addr: PROXY_ADDR,
                kind: ListenerKind::Proxy,
            },
        ];
        for (index, endpoint) in endpoints.iter().enumerate() {
            for &port in &endpoint.ports {
                listeners.push(ListenerSpec {
                    addr: SocketAddr::new(endpoint.addr, port),
                    kind: ListenerKind::Tcp { endpoint: index },
                });
            }
        }
        if listeners.len() > MAX_LISTENERS {
            return Err(EgressError::TooManyListeners {
                needed: listeners.len(),
                limit: MAX_LISTENERS,
            });
        }
        Ok(EgressPlan {
            patterns: hosts.to_vec(),
            endpoints,
            listeners,
        })
    }

    /// The patterns the plan was built from.
    pub fn patterns(&self) -> &[HostPattern] {
        &self.patterns
    }

    /// The endpoints, in listener order.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// Every socket [`bind_inside`](super::bind_inside) creates, in the order it sends them.
    pub fn listeners(&self) -> &[ListenerSpec] {
        &self.listeners
    }

    /// The TCP ports the tool must be allowed to connect to (Landlock `ConnectTcp`): every
    /// endpoint port, 53 for DNS over TCP and 3128 for the proxy. Sorted, without duplicates.
    pub fn connect_ports(&self) -> Vec<u16> {
        let ports: BTreeSet<u16> = self.listeners.iter().map(|l| l.addr.port()).collect();
        ports.into_iter().collect()
    }

    /// The files to show read-only inside the sandbox's mount namespace, by absolute path:
    /// `/etc/hosts`, `/etc/resolv.conf` and `/etc/nsswitch.conf`.
    ///
    /// They replace the host's files (which may be symlinks into `/run`); mount them over the
    /// real paths, not over symlink targets.
    pub fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        vec![
            (PathBuf::from("/etc/hosts"), self.hosts_file().into_bytes()),
            (
                PathBuf::from("/etc/resolv.conf"),
                self.resolv_conf().into_bytes(),
            ),
            (
                PathBuf::from("/etc/nsswitch.conf"),
                self.nsswitch_conf().into_bytes(),
            ),
        ]
    }

    /// `/etc/hosts`: localhost, then every exact allowed name at its loopback address.
    pub fn hosts_file(&self) -> String {
        let mut out = String::from("# written by toolpolicy egress: only these names resolve\n");
        let names_localhost = self
            .endpoints
            .iter()
            .any(|e| e.route == Route::Name("localhost".into()));
        if !names_localhost {
            out.push_str("127.0.0.1 localhost\n");
        }
        out.push_str("::1 ip6-localhost ip6-loopback\n");
        for e in &self.endpoints {
            if let Route::Name(name) = &e.route {
                out.push_str(&format!("{} {}\n", e.addr, name));
            }
        }
        out
    }

    /// `/etc/resolv.conf`: the sandbox's own responder, one quick try, no search domains.
    pub fn resolv_conf(&self) -> String {
        format!(
            "# written by toolpolicy egress\nnameserver {}\nsearch .\noptions timeout:1 attempts:1 ndots:1\n",
            DNS_ADDR.ip()
        )
    }

    /// `/etc/nsswitch.conf`: hosts from files then DNS, nothing that needs a daemon.
    pub fn nsswitch_conf(&self) -> String {
        String::from(
            "# written by toolpolicy egress\npasswd: files\ngroup: files\nshadow: files\n\
             hosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n\
             ethers: files\nrpc: files\n",
        )
    }

    /// Environment variables that point proxy-aware programs at the sandbox's CONNECT proxy
    /// (`HTTPS_PROXY`, `https_proxy`, `ALL_PROXY`, `all_proxy`). Optional: programs that ignore
    /// them still reach the pinned endpoints directly. `HTTP_PROXY` is left out on purpose:
    /// the proxy speaks CONNECT only.
    pub fn proxy_env(&self) -> Vec<(String, String)> {
        let url = format!("http://{PROXY_ADDR}");
        ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]
            .into_iter()
            .map(|k| (k.to_string(), url.clone()))
            .collect()
    }

    /// Whether a CONNECT to `host:port` is allowed by some pattern (names, wildcards and IP
    /// literals alike, any-port patterns included).
    pub fn admits(&self, host: &str, port: u16) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let ip = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(&host)
            .parse::<IpAddr>()
            .ok();
        self.patterns.iter().any(|p| match ip {
            Some(ip) => p.matches_ip(ip, port),
            None => p.matches_name(&host, port),
        })
    }

    /// The exact endpoint for `name`, if the policy lists it by name.
    pub(crate) fn endpoint_for_name(&self, name: &str) -> Option<usize> {
        self.endpoints
            .iter()
            .position(|e| matches!(&e.route, Route::Name(n) if n == name))
    }

    /// The wildcard pool (endpoint indices) whose suffix covers `name`.
    pub(crate) fn pool_for_name(&self, name: &str) -> Vec<usize> {
        self.endpoints
            .iter()
            .enumerate()
            .filter(|(_, e)| match &e.route {
                Route::Wildcard(suffix) => name
                    .strip_suffix(suffix.as_str())
                    .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
                _ => false,
            })
            .map(|(i, _)| i)
            .collect()
    }
}

/// Whether `ip` is an address the broker refuses to dial for a name unless the policy names it
/// literally: loopback, unspecified and link-local (cloud metadata lives at 169.254.169.254).
pub(crate) fn is_host_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_unspecified() || v4.is_link_local(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_host_local(IpAddr::V4(v4)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(list: &[&str]) -> Result<EgressPlan, EgressError> {
        let hosts: Vec<HostPattern> = list.iter().map(|s| s.parse().unwrap()).collect();
        EgressPlan::new(&hosts)
    }

    #[test]
    fn one_address_per_name_one_listener_per_port() {
        let p = plan(&["b.test:443", "a.test:80", "a.test:443", "127.0.0.2:8080"]).unwrap();
        // 127.0.0.2 is named literally, so names start at .3.
        let addrs: Vec<String> = p.endpoints().iter().map(|e| e.addr.to_string()).collect();
        assert_eq!(addrs, ["127.0.0.2", "127.0.0.3", "127.0.0.4"]);
        assert_eq!(p.listeners().len(), 3 + 4);
        assert_eq!(p.connect_ports(), vec![53, 80, 443, 3128, 8080]);
        assert!(p.hosts_file().contains("127.0.0.3 a.test\n"));
        assert!(!p.hosts_file().contains("127.0.0.2 "));
    }

    #[test]
    fn wildcard_pool_and_exact_name_under_it() {
        let p = plan(&["*.ex.test:443", "api.ex.test:8443"]).unwrap();
        let exact = p.endpoint_for_name("api.ex.test").unwrap();
        assert_eq!(p.endpoints()[exact].ports, vec![443, 8443]);
        assert_eq!(p.pool_for_name("x.ex.test").len(), WILDCARD_POOL);
        assert!(p.pool_for_name("ex.test").is_empty());
        assert!(p.pool_for_name("xex.test").is_empty());
    }

    #[test]
    fn refusals_explain() {
        let e = plan(&["127.0.0.1:53"]).unwrap_err().to_string();
        assert!(e.contains("DNS responder"), "{e}");
        let e = plan(&["127.0.0.1:3128"]).unwrap_err().to_string();
        assert!(e.contains("proxy"), "{e}");
    }

    #[test]
    fn any_port_is_proxy_only() {
        let p = plan(&["a.test:*", "*.w.test:443", "10.1.2.3:22", "[::1]:9"]).unwrap();
        assert!(
            p.endpoint_for_name("a.test").is_none(),
            "no listener for a:*"
        );
        assert!(p.admits("a.test", 1) && p.admits("A.test.", 65535));
        assert!(p.admits("x.w.test", 443) && !p.admits("x.w.test", 444));
        assert!(p.admits("10.1.2.3", 22) && !p.admits("10.1.2.3", 23));
        assert!(p.admits("[::1]", 9) && !p.admits("b.test", 443));
    }

    #[test]
    fn round_trips_through_json() {
        let p = plan(&["*.ex.test:443", "a.test:1", "[::1]:9"]).unwrap();
        let back: EgressPlan = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(p, back);
    }

    #[test]
    fn host_local_guard() {
        for ip in [
            "127.0.0.1",
            "0.0.0.0",
            "169.254.169.254",
            "::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_host_local(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["10.0.0.1", "93.184.216.34", "2001:db8::1"] {
            assert!(!is_host_local(ip.parse().unwrap()), "{ip}");
        }
    }
}
