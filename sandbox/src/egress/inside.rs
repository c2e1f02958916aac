//! The sandbox side: create every listening socket inside the new network namespace and hand it
//! to the broker.

use std::io;
use std::net::{IpAddr, TcpListener, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::plan::{EgressPlan, ListenerKind};
use crate::fdpass::send_fds;

/// Backlog of each endpoint listener: connections queue here while the broker accepts.
const BACKLOG: i32 = 1024;

/// Creates the listening sockets of every endpoint and the DNS responder (UDP and TCP on
/// 127.0.0.1:53), sends them to the broker over `channel`, then closes them here.
///
/// Call it in the sandbox's new network namespace with `lo` up, while the process still holds
/// `CAP_NET_BIND_SERVICE` (and `CAP_NET_ADMIN` when the policy names a non-loopback IP literal,
/// which is added to `lo`) in the namespace's user namespace: after unshare, before dropping
/// capabilities, Landlock and seccomp. The sockets keep this namespace for life, so the broker
/// serves them from outside while the tool can reach nothing else.
///
/// # Errors
///
/// Binding or sending failed; the message names the address and what is missing.
pub fn bind_inside(plan: &EgressPlan, channel: BorrowedFd<'_>) -> io::Result<()> {
    for endpoint in plan.endpoints() {
        if endpoint.needs_local_addr() {
            add_address_to_lo(endpoint.addr).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "egress: cannot add {} to lo inside the sandbox: {e} (needs CAP_NET_ADMIN \
                         in the sandbox's user namespace)",
                        endpoint.addr
                    ),
                )
            })?;
        }
    }
    // Best effort: only a faster path, never a weaker one.
    let _ = big_segments_on_lo();
    let mut sockets: Vec<(u32, OwnedFd)> = Vec::with_capacity(plan.listeners().len());
    for (index, spec) in plan.listeners().iter().enumerate() {
        let fd: io::Result<OwnedFd> = match spec.kind {
            ListenerKind::DnsUdp => UdpSocket::bind(spec.addr).map(OwnedFd::from),
            ListenerKind::DnsTcp | ListenerKind::Proxy | ListenerKind::Tcp { .. } => {
                TcpListener::bind(spec.addr).map(OwnedFd::from)
            }
        };
        let fd = fd.map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::EACCES) {
                " (binding ports below 1024 needs CAP_NET_BIND_SERVICE in the sandbox's user \
                 namespace: call bind_inside before dropping capabilities)"
            } else if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) {
                " (is lo up in the sandbox's network namespace?)"
            } else {
                ""
            };
            io::Error::new(
                e.kind(),
                format!(
                    "egress: cannot bind {} inside the sandbox: {e}{hint}",
                    spec.addr
                ),
            )
        })?;
        if !matches!(spec.kind, ListenerKind::DnsUdp) {
            // SAFETY: listen(2) on a socket we own; raising the backlog of a listening socket.
            unsafe { libc::listen(fd.as_raw_fd(), BACKLOG) };
        }
        sockets.push((index as u32, fd));
    }
    let borrowed: Vec<(u32, BorrowedFd<'_>)> =
        sockets.iter().map(|(i, fd)| (*i, fd.as_fd())).collect();
    send_fds(channel, &borrowed).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("egress: cannot send sockets to the broker: {e}"),
        )
    })
}

fn loopback_index() -> io::Result<u32> {
    // SAFETY: if_nametoindex reads a NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
    if index == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(index)
}

/// One rtnetlink attribute, padded to 4 bytes.
fn attr(kind: u16, data: &[u8]) -> Vec<u8> {
    let mut a = Vec::new();
    a.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
    a.extend_from_slice(&kind.to_ne_bytes());
    a.extend_from_slice(data);
    while a.len() % 4 != 0 {
        a.push(0);
    }
    a
}

/// Sends one rtnetlink request and waits for its acknowledgement.
fn netlink(kind: u16, flags: i32, body: &[u8]) -> io::Result<()> {
    let mut msg = Vec::new();
    msg.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
    msg.extend_from_slice(&kind.to_ne_bytes());
    msg.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_ACK | flags) as u16).to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(body);
    // SAFETY: plain socket creation; the result is checked and owned.
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor we own.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: sending a live buffer.
    if unsafe { libc::send(sock.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut reply = [0u8; 1024];
    // SAFETY: receiving into a live buffer.
    let n = unsafe { libc::recv(sock.as_raw_fd(), reply.as_mut_ptr().cast(), reply.len(), 0) };
    if n < 20 {
        return Err(io::Error::last_os_error());
    }
    if u16::from_ne_bytes([reply[4], reply[5]]) == libc::NLMSG_ERROR as u16 {
        let code = i32::from_ne_bytes(reply[16..20].try_into().expect("4 bytes"));
        if code != 0 && code != -libc::EEXIST {
            return Err(io::Error::from_raw_os_error(-code));
        }
    }
    Ok(())
}

/// Adds `ip` (/32 or /128) to `lo` with one rtnetlink `RTM_NEWADDR` request.
fn add_address_to_lo(ip: IpAddr) -> io::Result<()> {
    let (family, prefix, bytes, flags): (u8, u8, Vec<u8>, u8) = match ip {
        IpAddr::V4(v4) => (libc::AF_INET as u8, 32, v4.octets().to_vec(), 0),
        // No duplicate address detection: a tentative address cannot be bound.
        IpAddr::V6(v6) => (libc::AF_INET6 as u8, 128, v6.octets().to_vec(), 0x02),
    };
    let mut body = vec![family, prefix, flags, 0];
    body.extend_from_slice(&loopback_index()?.to_ne_bytes());
    body.extend(attr(libc::IFA_LOCAL, &bytes));
    body.extend(attr(libc::IFA_ADDRESS, &bytes));
    netlink(
        libc::RTM_NEWADDR,
        libc::NLM_F_CREATE | libc::NLM_F_EXCL,
        &body,
    )
}

/// Lets TCP on the sandbox's `lo` build segments of up to 512 KiB ("BIG TCP", Linux 6.3+ for
/// IPv4) instead of 64 KiB, so the broker's hop into the sandbox costs far fewer packets.
/// Changes only the sandbox's own `lo`. Best effort; older kernels keep 64 KiB.
fn big_segments_on_lo() -> io::Result<()> {
    const IFLA_GSO_MAX_SIZE: u16 = 41;
    const IFLA_GRO_MAX_SIZE: u16 = 58;
    const IFLA_GSO_IPV4_MAX_SIZE: u16 = 63;
    const IFLA_GRO_IPV4_MAX_SIZE: u16 = 64;
    // lo's tso_max_size.
    const SIZE: u32 = 524_280;
    // struct ifinfomsg: family, pad, type, index, flags, change.
    let mut body = vec![libc::AF_UNSPEC as u8, 0, 0, 0];
    body.extend_from_slice(&(loopback_index()? as i32).to_ne_bytes());
    body.extend_from_slice(&0u32.to_ne_bytes());
    body.extend_from_slice(&0u32.to_ne_bytes());
    for kind in [
        IFLA_GSO_MAX_SIZE,
        IFLA_GRO_MAX_SIZE,
        IFLA_GSO_IPV4_MAX_SIZE,
        IFLA_GRO_IPV4_MAX_SIZE,
    ] {
        body.extend(attr(kind, &SIZE.to_ne_bytes()));
    }
    netlink(libc::RTM_NEWLINK, 0, &body)
}
