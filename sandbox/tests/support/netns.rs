//! Helpers shared by the egress tests and the egress bench (included with `#[path]`): bringing
//! `lo` up in a fresh network namespace, the channel to the broker, and a loopback HTTP server.

#![allow(dead_code)] // each includer uses part of it

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Brings the loopback interface of the current network namespace up.
pub fn lo_up() -> io::Result<()> {
    // SAFETY: plain socket; owned below.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: an all-zero ifreq is valid; the name is NUL-terminated; the ioctls read and
    // write only this struct.
    unsafe {
        let mut req: libc::ifreq = std::mem::zeroed();
        req.ifr_name[0] = b'l' as libc::c_char;
        req.ifr_name[1] = b'o' as libc::c_char;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) < 0 {
            return Err(io::Error::last_os_error());
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &mut req) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A `SOCK_SEQPACKET` unix socket pair, as the runner uses for the egress channel.
pub fn socketpair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills two descriptors, owned below.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0, "socketpair: {}", io::Error::last_os_error());
    // SAFETY: fresh descriptors.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// An HTTP/1.1 server on the host's 127.0.0.1 answering every request with
/// `"{greeting} {path}\n"`, and the number of connections it accepted.
pub fn http_server(greeting: &'static str) -> (SocketAddr, Arc<AtomicUsize>) {
    http_server_at("127.0.0.1:0", greeting)
}

/// [`http_server`] listening at `addr` (a port of 0: any).
pub fn http_server_at(addr: &str, greeting: &'static str) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind(addr).unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&req);
                let path = text.split_whitespace().nth(1).unwrap_or("?").to_string();
                let body = format!("{greeting} {path}\n");
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    (addr, hits)
}
