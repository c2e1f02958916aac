//! Passing descriptors over a unix socket (`SCM_RIGHTS`): the egress listeners from the sandbox
//! to the broker, the exec-notification listener from the confined command to its
//! supervisor, and a hardened run's channels to the zygote ([`send_msg`], one message each) and
//! its command's pidfd back ([`send_one`]).
//!
//! Wire format, one `sendmsg` per batch: `b"FDS1"`, a little-endian `u32` count `n`, then `n`
//! little-endian `u32` listener indices; the `n` descriptors ride in the control message in the
//! same order. A batch with `n = 0` ends the transfer. Works over `SOCK_STREAM` and
//! `SOCK_SEQPACKET` pairs.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

const MAGIC: &[u8; 4] = b"FDS1";
/// Below the kernel's `SCM_MAX_FD` (253).
pub(crate) const BATCH: usize = 200;
const MAX_MSG: usize = 8 + 4 * BATCH;

/// Sends `fds` (with their indices) and closes nothing; the caller drops them.
pub(crate) fn send_fds(channel: BorrowedFd<'_>, fds: &[(u32, BorrowedFd<'_>)]) -> io::Result<()> {
    for chunk in fds.chunks(BATCH) {
        send_batch(channel, chunk)?;
    }
    send_batch(channel, &[])
}

fn send_batch(channel: BorrowedFd<'_>, chunk: &[(u32, BorrowedFd<'_>)]) -> io::Result<()> {
    let mut payload = Vec::with_capacity(8 + 4 * chunk.len());
    payload.extend_from_slice(MAGIC);
    payload.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
    for (index, _) in chunk {
        payload.extend_from_slice(&index.to_le_bytes());
    }
    let fds: Vec<BorrowedFd<'_>> = chunk.iter().map(|(_, fd)| *fd).collect();
    send_msg(channel, &payload, &fds)
}

/// Sends `payload` with `fds` in one `sendmsg` (one message on a `SOCK_SEQPACKET` socket, so
/// concurrent senders never interleave); closes nothing.
pub(crate) fn send_msg(
    channel: BorrowedFd<'_>,
    payload: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    let raw: Vec<RawFd> = fds.iter().map(|fd| fd.as_raw_fd()).collect();
    let fd_bytes = std::mem::size_of_val(raw.as_slice());
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8).max(1)];
    let mut payload = payload.to_vec();
    let mut iov = iovec(&mut payload);
    let control: &mut [u64] = if raw.is_empty() {
        &mut []
    } else {
        &mut control
    };
    let msg = msghdr(&mut iov, control);
    if !raw.is_empty() {
        // SAFETY: msg_control points at `space` bytes, enough for one header carrying
        // `fd_bytes`; CMSG_FIRSTHDR is therefore non-null and CMSG_DATA in bounds.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(fd_bytes as u32) as _;
            std::ptr::copy_nonoverlapping(
                raw.as_ptr().cast::<u8>(),
                libc::CMSG_DATA(cmsg),
                fd_bytes,
            );
        }
    }
    loop {
        // SAFETY: msg references live buffers for the duration of the call.
        let n = unsafe { libc::sendmsg(channel.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n >= 0 {
            if n as usize != payload.len() {
                return Err(io::Error::other(
                    "descriptor channel: short send of a message",
                ));
            }
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Receives one message into `payload` with up to `max_fds` descriptors (close-on-exec);
/// returns its length (0: the peer closed) and the descriptors. A message whose descriptors
/// did not fit is refused (those that came are closed).
pub(crate) fn recv_msg(
    channel: BorrowedFd<'_>,
    payload: &mut [u8],
    max_fds: usize,
) -> io::Result<(usize, Vec<OwnedFd>)> {
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space =
        unsafe { libc::CMSG_SPACE((max_fds * std::mem::size_of::<RawFd>()) as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = iovec(payload);
    let mut msg = msghdr(&mut iov, &mut control);
    let n = recvmsg(channel, &mut msg)?;
    let mut fds = Vec::new();
    // SAFETY: `msg` was just filled by recvmsg.
    unsafe { received_fds(&msg, |fd| fds.push(fd)) };
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(bad("control data truncated"));
    }
    if msg.msg_flags & libc::MSG_TRUNC != 0 {
        return Err(bad("message longer than its buffer"));
    }
    Ok((n, fds))
}

/// Receives every batch until the end marker; returns `(index, fd)` pairs.
///
/// Descriptors arrive close-on-exec, so they never leak into programs the caller starts later.
pub(crate) fn recv_fds(channel: BorrowedFd<'_>) -> io::Result<Vec<(u32, OwnedFd)>> {
    let mut out = Vec::new();
    loop {
        let (payload, fds) = recv_batch(channel)?;
        let mut fds = fds.into_iter();
        let count = u32::from_le_bytes(payload[4..8].try_into().expect("4 bytes")) as usize;
        if count == 0 {
            if fds.next().is_some() {
                return Err(bad("end marker carried descriptors"));
            }
            return Ok(out);
        }
        for i in 0..count {
            let index = u32::from_le_bytes(payload[8 + 4 * i..12 + 4 * i].try_into().expect("4"));
            let fd = fds
                .next()
                .ok_or_else(|| bad("fewer descriptors than indices"))?;
            out.push((index, fd));
        }
        if fds.next().is_some() {
            return Err(bad("more descriptors than indices"));
        }
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("descriptor channel: malformed batch ({what})"),
    )
}

fn recv_batch(channel: BorrowedFd<'_>) -> io::Result<(Vec<u8>, Vec<OwnedFd>)> {
    let mut payload = vec![0u8; MAX_MSG];
    let (n, fds) = recv_msg(channel, &mut payload, BATCH)?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "egress channel closed before the sandbox sent its sockets \
             (did the sandbox fail to start, or does the parent still hold the child's end?)",
        ));
    }
    payload.truncate(n);
    if n < 8 || &payload[..4] != MAGIC {
        return Err(bad("bad header"));
    }
    let count = u32::from_le_bytes(payload[4..8].try_into().expect("4 bytes")) as usize;
    if count > BATCH {
        return Err(bad("batch too large"));
    }
    // A stream socket may split a batch; the descriptors came with its first byte.
    while payload.len() < 8 + 4 * count {
        let mut rest = vec![0u8; 8 + 4 * count - payload.len()];
        // SAFETY: reading into a live buffer of the given length.
        let m = unsafe { libc::read(channel.as_raw_fd(), rest.as_mut_ptr().cast(), rest.len()) };
        if m < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if m == 0 {
            return Err(bad("batch cut short"));
        }
        payload.extend_from_slice(&rest[..m as usize]);
    }
    if payload.len() != 8 + 4 * count {
        return Err(bad("trailing bytes"));
    }
    Ok((payload, fds))
}

/// Sends one descriptor as a batch of one (index 0), without allocating: the strict child calls
/// it after its rlimits are set.
pub(crate) fn send_one(channel: BorrowedFd<'_>, fd: BorrowedFd<'_>) -> io::Result<()> {
    let mut payload = [0u8; 12];
    payload[..4].copy_from_slice(MAGIC);
    payload[4..8].copy_from_slice(&1u32.to_le_bytes());
    let mut control = OneFdControl::zeroed();
    let mut iov = iovec(&mut payload);
    let msg = control.header(&mut iov);
    // SAFETY: msg_control points at ONE_FD_SPACE bytes, room for one header carrying one fd.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        libc::CMSG_DATA(cmsg)
            .cast::<RawFd>()
            .write_unaligned(fd.as_raw_fd());
    }
    loop {
        // SAFETY: msg references live buffers for the duration of the call.
        let n = unsafe { libc::sendmsg(channel.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n == payload.len() as isize {
            return Ok(());
        }
        if n >= 0 {
            return Err(io::Error::from(io::ErrorKind::WriteZero));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Whether `payload` is the header [`send_one`] sends with its one descriptor.
pub(crate) fn is_one_fd_header(payload: &[u8]) -> bool {
    payload.len() == 12 && &payload[..4] == MAGIC && payload[4..8] == 1u32.to_le_bytes()
}

/// Receives what [`send_one`] sent, without allocating: the strict spawn's parent calls it
/// while its child still shares its memory.
///
/// Errors carry only an `ErrorKind` or an OS error, which do not allocate either.
pub(crate) fn recv_one(channel: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let mut payload = [0u8; 12];
    let mut control = OneFdControl::zeroed();
    let mut iov = iovec(&mut payload);
    let mut msg = control.header(&mut iov);
    let n = recvmsg(channel, &mut msg)?;
    let mut received = None;
    // SAFETY: `msg` was just filled by recvmsg; extra descriptors are closed as they drop.
    unsafe {
        received_fds(&msg, |fd| {
            received.get_or_insert(fd);
        })
    };
    let well_formed = is_one_fd_header(&payload[..n]) && msg.msg_flags & libc::MSG_CTRUNC == 0;
    match received {
        Some(fd) if well_formed => Ok(fd),
        _ if n == 0 => Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
        _ => Err(io::Error::from(io::ErrorKind::InvalidData)),
    }
}

fn recvmsg(channel: BorrowedFd<'_>, msg: &mut libc::msghdr) -> io::Result<usize> {
    loop {
        // SAFETY: msg references live buffers for the duration of the call.
        let n = unsafe { libc::recvmsg(channel.as_raw_fd(), msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Hands every descriptor of the `SCM_RIGHTS` messages in `msg` to `take`, in order.
///
/// # Safety
///
/// `msg` was filled by `recvmsg`: its control data is valid up to `msg_controllen`, and the
/// descriptors in it are fresh ones that nobody else owns.
unsafe fn received_fds(msg: &libc::msghdr, mut take: impl FnMut(OwnedFd)) {
    // SAFETY: the CMSG_* walk stays inside the control data the caller vouches for.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    take(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
}

/// Room for one `SCM_RIGHTS` header carrying one descriptor (`CMSG_SPACE(4)` on 64-bit Linux).
const ONE_FD_SPACE: usize = 24;

/// Control-message buffer for one descriptor, aligned like `cmsghdr`.
struct OneFdControl([u64; ONE_FD_SPACE / 8]);

impl OneFdControl {
    fn zeroed() -> OneFdControl {
        OneFdControl([0; ONE_FD_SPACE / 8])
    }

    /// A message header over `iov` whose control data is this buffer.
    fn header(&mut self, iov: &mut libc::iovec) -> libc::msghdr {
        msghdr(iov, &mut self.0)
    }
}

/// A message header over one buffer, with `control` as its control data (none when empty).
/// `CMSG_SPACE` is a multiple of 8 on 64-bit Linux, so a buffer of whole words sized from it
/// has exactly that length, with no trailing bytes the kernel would read as another header.
fn msghdr(iov: &mut libc::iovec, control: &mut [u64]) -> libc::msghdr {
    // SAFETY: an all-zero msghdr is valid; fields are filled below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    if !control.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(control) as _;
    }
    msg
}

fn iovec(buf: &mut [u8]) -> libc::iovec {
    libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    }
}

/// A unix socket pair of `kind` (`SOCK_STREAM`, `SOCK_SEQPACKET`), close-on-exec.
pub(crate) fn socketpair(kind: libc::c_int) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: socketpair fills two fds.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            kind | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;

    #[test]
    fn one_fd_space_is_what_the_kernel_wants() {
        // SAFETY: a pure size computation.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) };
        assert_eq!(space as usize, ONE_FD_SPACE);
    }

    #[test]
    fn send_one_and_recv_one_carry_a_working_descriptor() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let (mut pipe_r, pipe_w) = std::io::pipe().unwrap();
        send_one(a.as_fd(), pipe_w.as_fd()).unwrap();
        drop(pipe_w);
        let received = recv_one(b.as_fd()).unwrap();
        std::fs::File::from(received).write_all(b"through").unwrap();
        let mut text = String::new();
        pipe_r.read_to_string(&mut text).unwrap();
        assert_eq!(text, "through");
        // A closed channel is an end of file, not a descriptor.
        drop(a);
        let err = recv_one(b.as_fd()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    /// A sequenced-packet message longer than the receiver's buffer is an error, never a
    /// short message read as whole (the zygote would parse a cut request).
    #[test]
    fn a_message_longer_than_the_buffer_is_an_error() {
        let (a, b) = socketpair(libc::SOCK_SEQPACKET).unwrap();
        send_msg(a.as_fd(), &[7u8; 100], &[]).unwrap();
        let mut small = [0u8; 10];
        let err = recv_msg(b.as_fd(), &mut small, 1).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        send_msg(a.as_fd(), &[7u8; 10], &[]).unwrap();
        assert_eq!(recv_msg(b.as_fd(), &mut small, 1).unwrap().0, 10);
    }
}
