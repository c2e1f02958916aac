//! `host:port` patterns of `net = {"hosts": [...]}`.
//!
//! Forms: `api.example.com:443` (one name, one port), `*.example.org:443` (any name that ends in
//! `.example.org`, one or more labels deep, but not `example.org` itself), `127.0.0.1:8080` and
//! `[::1]:8080` (IP literals), and `host:*` (any port). Names are lowercase ASCII.
//!
//! ```
//! use policy_runtime::host::HostPattern;
//!
//! let p: HostPattern = "*.example.org:443".parse()?;
//! assert!(p.matches_name("api.example.org", 443));
//! assert!(!p.matches_name("example.org", 443));
//! assert!(!p.matches_name("api.example.org", 80));
//! # Ok::<(), policy_runtime::host::HostError>(())
//! ```

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which hosts a pattern admits.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostMatch {
    /// Exactly this DNS name.
    Name(String),
    /// Any name ending in `.` + this suffix.
    Subdomains(String),
    /// Exactly this address.
    Ip(IpAddr),
}

/// Which ports a pattern admits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PortMatch {
    /// One port.
    Port(u16),
    /// `*`: any port.
    Any,
}

impl PortMatch {
    /// Whether `port` is admitted.
    pub fn admits(self, port: u16) -> bool {
        match self {
            PortMatch::Port(p) => p == port,
            PortMatch::Any => true,
        }
    }
}

/// One `host:port` pattern.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPattern {
    /// The host part.
    pub host: HostMatch,
    /// The port part.
    pub port: PortMatch,
}

/// Why a host pattern was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid host pattern `{pattern}`: {reason}")]
pub struct HostError {
    pattern: String,
    reason: String,
}

impl HostPattern {
    /// Whether a connection to DNS name `name` on `port` is admitted.
    pub fn matches_name(&self, name: &str, port: u16) -> bool {
        if !self.port.admits(port) {
            return false;
        }
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        match &self.host {
            HostMatch::Name(n) => *n == name,
            HostMatch::Subdomains(suffix) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            HostMatch::Ip(ip) => name.parse::<IpAddr>().is_ok_and(|a| a == *ip),
        }
    }

    /// Whether a connection to address `ip` on `port` is admitted (IP-literal patterns only).
    pub fn matches_ip(&self, ip: IpAddr, port: u16) -> bool {
        self.port.admits(port) && self.host == HostMatch::Ip(ip)
    }
}

fn valid_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

impl FromStr for HostPattern {
    type Err = HostError;
    fn from_str(s: &str) -> Result<Self, HostError> {
        let err = |reason: &str| HostError {
            pattern: s.to_string(),
            reason: reason.to_string(),
        };
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (v6, port) = rest
                .split_once("]:")
                .ok_or_else(|| err("write IPv6 as `[addr]:port`"))?;
            let ip = v6
                .parse::<std::net::Ipv6Addr>()
                .map_err(|_| err("not an IPv6 address inside `[...]`"))?;
            (HostMatch::Ip(IpAddr::V6(ip)), port)
        } else {
            let (host, port) = s.rsplit_once(':').ok_or_else(|| {
                err("a port is required: write `host:443`, or `host:*` for any port")
            })?;
            let host = if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
                HostMatch::Ip(IpAddr::V4(ip))
            } else if let Some(suffix) = host.strip_prefix("*.") {
                if !valid_dns_name(suffix) || !suffix.contains('.') {
                    return Err(err("`*.` must be followed by a lowercase domain with at least two labels, e.g. `*.example.com`"));
                }
                HostMatch::Subdomains(suffix.to_string())
            } else if valid_dns_name(host) {
                HostMatch::Name(host.to_string())
            } else if host.contains(':') {
                return Err(err("write IPv6 as `[addr]:port`"));
            } else {
                return Err(err("not a lowercase DNS name, `*.domain` or IP address"));
            };
            (host, port)
        };
        let port = match port {
            "*" => PortMatch::Any,
            p => match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err(err("the port must be 1-65535 or `*`")),
                Ok(p) => PortMatch::Port(p),
            },
        };
        Ok(HostPattern { host, port })
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostMatch::Name(n) => write!(f, "{n}")?,
            HostMatch::Subdomains(s) => write!(f, "*.{s}")?,
            HostMatch::Ip(IpAddr::V4(ip)) => write!(f, "{ip}")?,
            HostMatch::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
        }
        match self.port {
            PortMatch::Port(p) => write!(f, ":{p}"),
            PortMatch::Any => write!(f, ":*"),
        }
    }
}

impl Serialize for HostPattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HostPattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for text in [
            "api.example.com:443",
            "*.example.org:443",
            "127.0.0.1:8080",
            "[::1]:80",
            "localhost:*",
        ] {
            let p: HostPattern = text.parse().unwrap();
            assert_eq!(p.to_string(), text);
        }
    }

    #[test]
    fn rejects() {
        for text in [
            "example.com",
            "example.com:0",
            "example.com:70000",
            "Example.com:443",
            "*.com:443",
            "::1:80",
            "a..b:1",
            "-a.b:1",
            ":443",
        ] {
            assert!(text.parse::<HostPattern>().is_err(), "{text}");
        }
    }

    #[test]
    fn matching() {
        let p: HostPattern = "api.example.com:443".parse().unwrap();
        assert!(p.matches_name("API.example.com.", 443));
        assert!(!p.matches_name("api.example.com.evil.net", 443));
        let w: HostPattern = "*.example.com:*".parse().unwrap();
        assert!(w.matches_name("a.b.example.com", 1));
        assert!(!w.matches_name("badexample.com", 1));
        let ip: HostPattern = "127.0.0.1:8080".parse().unwrap();
        assert!(ip.matches_ip("127.0.0.1".parse().unwrap(), 8080));
        assert!(!ip.matches_ip("127.0.0.2".parse().unwrap(), 8080));
    }
}
