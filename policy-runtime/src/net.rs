//! URLs judged against a tool's `net` stance, in process.
//!
//! A string argument that names an `http`, `https`, `ws` or `wss` URL is judged before the
//! body runs, the way the [gate](crate::gate) judges paths against `fs`: `"deny"` refuses every
//! URL, `"allow"` admits every one, and a host list admits the URL only when its `host:port`
//! (the scheme's default port when none is written) matches one of the declared
//! [`HostPattern`]s, with the sandbox's wildcard rules. The gate is active only when the policy
//! declares `net`.
//!
//! The URL is read the way browsers and the `url` crate (hence reqwest) read it (WHATWG):
//!
//! * userinfo is not the host: `http://api.example.com@evil.example` goes to `evil.example`;
//! * a fragment or query is not the host: `http://evil.example#api.example.com`;
//! * IPv4 in decimal, octal or hex (`http://2130706433`, `http://0177.0.0.1`) is the address it
//!   names, and an IP literal matches only a pattern that declares that address, never a name;
//! * international names are compared in their ASCII (punycode) form, so a look-alike
//!   (`аpi.example.com` with a Cyrillic `а`) is another host; case and a trailing dot do not
//!   matter.
//!
//! Other parsers disagree with WHATWG on some strings (`http://api.example.com\@evil.example`
//! is `api.example.com` to a browser, `evil.example` to an RFC 3986 reader). Such a string has
//! a second, RFC 3986 reading, and both readings must be admitted, or it is denied as
//! ambiguous. A string that starts like one of these URLs but does not parse is denied.
//!
//! ```
//! use policy_runtime::net::check_url;
//! use policy_runtime::policy::ToolPolicy;
//!
//! let policy = ToolPolicy::from_json_str("p", r#"{"net": {"hosts": ["api.example.com:443"]}}"#)?;
//! assert!(check_url(&policy, "https://API.example.com./v1").is_ok());
//! assert!(check_url(&policy, "https://api.example.com@evil.example/").is_err());
//! assert!(check_url(&policy, "http://api.example.com/").is_err()); // port 80
//! # Ok::<(), policy_runtime::LoadError>(())
//! ```

use url::{Host, Url};

use crate::denial::{Denial, DenialCode};
use crate::host::HostPattern;
use crate::policy::{NetPolicy, Stance, ToolPolicy};

/// The schemes whose strings are judged as URLs.
pub const SCHEMES: [&str; 4] = ["http", "https", "ws", "wss"];

/// Whether `s` is meant as an `http`/`https`/`ws`/`wss` URL: its scheme, read as a WHATWG
/// parser reads it (leading spaces and controls skipped, tabs and newlines dropped, any case),
/// is one of [`SCHEMES`]. Cheap: it looks at the first few characters only.
///
/// ```
/// use policy_runtime::net::names_url;
/// assert!(names_url("HTTPS://example.com"));
/// assert!(names_url(" h\tttp://example.com"));
/// assert!(!names_url("file:///etc/passwd"));
/// assert!(!names_url("see http://example.com"));
/// ```
pub fn names_url(s: &str) -> bool {
    let mut scheme = [0u8; 5];
    let mut len = 0;
    for b in s.bytes().skip_while(|b| *b <= b' ') {
        match b {
            b'\t' | b'\n' | b'\r' => continue,
            b':' => return SCHEMES.iter().any(|k| k.as_bytes() == &scheme[..len]),
            _ if len < scheme.len() && b.is_ascii_alphabetic() => {
                scheme[len] = b.to_ascii_lowercase();
                len += 1;
            }
            _ => return false,
        }
    }
    false
}

/// Parses `s` as a URL of one of [`SCHEMES`], if it names one ([`names_url`]). `Some(Err)`:
/// it names one but does not parse.
pub fn parse_url(s: &str) -> Option<Result<Url, url::ParseError>> {
    names_url(s).then(|| Url::parse(s))
}

/// Judges one string for `policy`'s `net` stance: `Ok(None)` when the gate is inactive or `raw`
/// names no URL, `Ok(Some(url))` when admitted, the denial otherwise. The building block of the
/// argument gate, also usable on a URL that reached the tool some other way.
pub fn check_url(policy: &ToolPolicy, raw: &str) -> Result<Option<Url>, Denial> {
    match &policy.net {
        None => Ok(None),
        Some(net) => judge(net, raw, &""),
    }
}

/// Judges `raw` against `net`; `pointer` names the argument in the denial (written out only
/// for a denial: the gate calls this for every string of the arguments).
pub(crate) fn judge(
    net: &NetPolicy,
    raw: &str,
    pointer: &dyn std::fmt::Display,
) -> Result<Option<Url>, Denial> {
    let url = match parse_url(raw) {
        None => return Ok(None),
        Some(Ok(url)) => url,
        Some(Err(e)) => {
            return Err(denial(
                DenialCode::InvalidUrl,
                pointer,
                format!(
                    "`{}` is not a valid URL ({e}), so it is not used.",
                    raw.escape_debug()
                ),
                None,
            ))
        }
    };
    admit_url(net, &url).map_err(|reason| {
        denial(
            DenialCode::UrlNotAllowed,
            pointer,
            reason,
            Some(url.as_str()),
        )
    })?;
    if let Some((host, port)) = second_reading(raw) {
        let first = url.host().map(|h| h.to_owned());
        let same =
            host.as_ref().ok() == first.as_ref() && Some(port) == url.port_or_known_default();
        if !same && !host.as_ref().is_ok_and(|h| endpoint_admitted(net, h, port)) {
            let other = match &host {
                Ok(h) => endpoint(h, port),
                Err(text) => format!("the host `{}`", text.escape_debug()),
            };
            let read = first.map_or("no host".to_string(), |h| {
                endpoint(&h, url.port_or_known_default().unwrap_or(port))
            });
            return Err(denial(
                DenialCode::UrlNotAllowed,
                pointer,
                format!(
                    "`{}` is ambiguous: a browser reads it as {read}, but other URL readers read {other}, and both must be allowed. {}",
                    raw.escape_debug(),
                    allowed_list(net),
                ),
                Some(url.as_str()),
            ));
        }
    }
    Ok(Some(url))
}

/// Whether `net` admits a connection to `url`, the one decision the gate and the HTTP client
/// both make. `Err` holds the reason, written for the model.
///
/// ```
/// use policy_runtime::net::admit_url;
/// use policy_runtime::policy::NetPolicy;
///
/// let net = NetPolicy::Hosts(vec!["*.example.org:443".parse()?]);
/// assert!(admit_url(&net, &"https://a.example.org/".parse()?).is_ok());
/// assert!(admit_url(&net, &"https://example.org/".parse()?).is_err());
/// assert!(admit_url(&NetPolicy::Deny, &"https://a.example.org/".parse()?).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn admit_url(net: &NetPolicy, url: &Url) -> Result<(), String> {
    if !SCHEMES.contains(&url.scheme()) {
        return Err(format!(
            "`{url}` is not an http, https, ws or wss URL, so this tool may not fetch it."
        ));
    }
    let (Some(host), Some(port)) = (url.host(), url.port_or_known_default()) else {
        return Err(format!("`{url}` names no host."));
    };
    let host = host.to_owned();
    if endpoint_admitted(net, &host, port) {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not an endpoint this tool may reach. {}",
            endpoint(&host, port),
            allowed_list(net)
        ))
    }
}

/// Whether `net` admits `host` on `port`: the single matching rule, on the host as the URL
/// parser normalized it (lowercase ASCII, punycode, IP addresses as addresses).
pub fn endpoint_admitted(net: &NetPolicy, host: &Host<String>, port: u16) -> bool {
    match net.stance() {
        Stance::Nothing => false,
        Stance::Anything => true,
        Stance::Only(patterns) => patterns.iter().any(|p| pattern_admits(p, host, port)),
    }
}

/// One pattern against one normalized host: a name matches name patterns only, an address
/// matches only the pattern that declares that address.
pub fn pattern_admits(pattern: &HostPattern, host: &Host<String>, port: u16) -> bool {
    match host {
        Host::Domain(name) => {
            !matches!(pattern.host, crate::host::HostMatch::Ip(_))
                && pattern.matches_name(name, port)
        }
        Host::Ipv4(ip) => pattern.matches_ip((*ip).into(), port),
        Host::Ipv6(ip) => pattern.matches_ip((*ip).into(), port),
    }
}

fn endpoint(host: &Host<String>, port: u16) -> String {
    format!("{host}:{port}")
}

fn allowed_list(net: &NetPolicy) -> String {
    match net.stance() {
        Stance::Nothing => "This tool may not use the network.".to_string(),
        Stance::Anything => String::new(),
        Stance::Only(h) => format!(
            "It may reach only: {}.",
            h.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn denial(
    code: DenialCode,
    pointer: &dyn std::fmt::Display,
    reason: String,
    url: Option<&str>,
) -> Denial {
    Denial::of_argument(code, pointer, reason, url.map(str::to_string))
}

/// The RFC 3986 reading of a URL string's endpoint, when it has `//` after the scheme: the
/// authority ends at the first `/`, `?` or `#` (not at `\`), the userinfo ends at its last
/// `@`, and nothing is dropped or unescaped except what the host parser itself decodes. `Err`
/// holds a host text that does not parse as a host (the reading is then not admitted).
fn second_reading(raw: &str) -> Option<(Result<Host<String>, String>, u16)> {
    let trimmed = raw.trim_matches(|c: char| c <= ' ');
    let (scheme, rest) = trimmed.split_once(':')?;
    let rest = rest.strip_prefix("//")?;
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if hostport.starts_with('[') {
        match hostport.find(']') {
            Some(end) => (&hostport[..=end], hostport[end + 1..].strip_prefix(':')),
            None => (hostport, None),
        }
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    let default = match scheme.to_ascii_lowercase().as_str() {
        "https" | "wss" => 443,
        _ => 80,
    };
    let port = match port {
        None | Some("") => default,
        Some(p) => match p.parse::<u16>() {
            Ok(p) => p,
            Err(_) => return Some((Err(hostport.to_string()), default)),
        },
    };
    Some((Host::parse(host).map_err(|_| host.to_string()), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[&str]) -> NetPolicy {
        NetPolicy::Hosts(list.iter().map(|h| h.parse().unwrap()).collect())
    }

    #[test]
    fn names_url_reads_the_scheme_like_whatwg() {
        for yes in ["http://a", "WSS://a", "\u{1}https://a", "h\nt\ttp:x", "ws:"] {
            assert!(names_url(yes), "{yes:?}");
        }
        for no in [
            "",
            "http",
            "httpx://a",
            "ftp://a",
            "/http://a",
            "a http://b",
        ] {
            assert!(!names_url(no), "{no:?}");
        }
    }

    #[test]
    fn second_reading_follows_rfc3986() {
        let (h, p) = second_reading("http://api.example.com\\@evil.example/").unwrap();
        assert_eq!(h.unwrap(), Host::Domain("evil.example".to_string()));
        assert_eq!(p, 80);
        let (h, p) = second_reading("https://u:p@[::1]:8443/x").unwrap();
        assert_eq!(h.unwrap().to_string(), "[::1]");
        assert_eq!(p, 8443);
        assert!(second_reading("http:evil.example").is_none());
    }

    #[test]
    fn deny_allow_and_lists() {
        let url: Url = "https://api.example.com/".parse().unwrap();
        assert!(admit_url(&NetPolicy::Deny, &url).is_err());
        assert!(admit_url(&NetPolicy::Allow, &url).is_ok());
        assert!(admit_url(&hosts(&["api.example.com:443"]), &url).is_ok());
        assert!(admit_url(&hosts(&["api.example.com:80"]), &url).is_err());
        assert!(admit_url(&hosts(&["*.example.com:*"]), &url).is_ok());
        assert!(admit_url(&hosts(&[]), &url).is_err());
    }
}
