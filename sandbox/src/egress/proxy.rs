//! The HTTP CONNECT proxy's request parsing and replies. The tunnel itself is carried like any
//! pinned endpoint, by the broker.

use std::io::{Read, Write};
use std::net::TcpStream;

/// The most a request head may take.
const MAX_HEAD: usize = 8 * 1024;

/// A parsed `CONNECT host:port HTTP/1.x` request.
pub(crate) struct Connect {
    /// The host as written (a name, an IPv4 address or a bracketed IPv6 address), lowercase.
    pub(crate) host: String,
    pub(crate) port: u16,
    /// Bytes that followed the request head.
    pub(crate) early: Vec<u8>,
}

/// Reads one request head and parses it as CONNECT; the error is the reason to send back.
pub(crate) fn read_connect(stream: &mut TcpStream) -> Result<Connect, String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    let end = loop {
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if head.len() > MAX_HEAD {
            return Err("request head too long".into());
        }
        match stream.read(&mut buf) {
            Ok(0) => return Err("connection closed before a full request".into()),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("reading the request: {e}")),
        }
    };
    let early = head.split_off(end);
    let text = String::from_utf8_lossy(&head);
    let line = text.lines().next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    if method != Some("CONNECT") {
        return Err(format!(
            "this proxy only tunnels (CONNECT host:port); got `{}`",
            method.unwrap_or_default()
        ));
    }
    if !version.is_some_and(|v| v.starts_with("HTTP/1.")) || parts.next().is_some() {
        return Err("malformed request line".into());
    }
    let target = target.unwrap_or_default();
    let (host, port) = target
        .rsplit_once(':')
        .ok_or_else(|| format!("`{target}` has no port"))?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("`{target}` has no valid port"))?;
    if host.is_empty() || host.contains(['/', '@', ' ']) {
        return Err(format!("`{target}` is not a host:port"));
    }
    Ok(Connect {
        host: host.trim_end_matches('.').to_ascii_lowercase(),
        port,
        early,
    })
}

/// Sends a status line; error statuses carry `why` as a short text body.
pub(crate) fn reply(stream: &mut TcpStream, status: u16, why: &str) {
    let reason = match status {
        200 => "Connection established",
        400 => "Bad Request",
        403 => "Forbidden",
        _ => "Bad Gateway",
    };
    let message = if status == 200 {
        format!("HTTP/1.1 200 {reason}\r\n\r\n")
    } else {
        let body = format!("egress: {why}\n");
        format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let _ = stream.write_all(message.as_bytes());
}
