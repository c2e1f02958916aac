//! Loopback ports for tests. Shared with `#[path]`.
//!
//! A port found free by binding and releasing it can be taken by a parallel test before it is
//! used; a port held bound (without `listen`) refuses connections and stays this test's.

/// A TCP socket bound to a free port of 127.0.0.1 without `listen`, and its address.
pub fn bound_not_listening() -> (std::os::fd::OwnedFd, std::net::SocketAddr) {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: plain socket calls on a new descriptor and local, zeroed structures.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let fd = std::os::fd::OwnedFd::from_raw_fd(fd);
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let rc = libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_in).cast(),
            len,
        );
        assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
        let mut got = len;
        libc::getsockname(
            fd.as_raw_fd(),
            (&mut addr as *mut libc::sockaddr_in).cast(),
            &mut got,
        );
        let port = u16::from_be(addr.sin_port);
        (fd, std::net::SocketAddr::from(([127, 0, 0, 1], port)))
    }
}
