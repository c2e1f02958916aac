//! Moving bytes between two TCP sockets with splice(2) through a pipe, without copying them
//! through user space.

use std::io;
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes asked for per splice call; the pipe is enlarged to match where the host allows.
const CHUNK: usize = 1 << 20;

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors on success, which we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors from pipe2.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // Best effort: a bigger pipe means fewer syscalls; the default 64 KiB still works.
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, CHUNK as libc::c_int) };
    Ok((r, w))
}

fn splice(from: &impl AsRawFd, to: &impl AsRawFd, len: usize) -> io::Result<usize> {
    loop {
        // SAFETY: splice between two descriptors we hold; null offsets (sockets and pipes).
        let n = unsafe {
            libc::splice(
                from.as_raw_fd(),
                std::ptr::null_mut(),
                to.as_raw_fd(),
                std::ptr::null_mut(),
                len,
                libc::SPLICE_F_MOVE,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Copies `from` to `to` until `from` reaches end of file, then half-closes `to` so the peer
/// sees the end too. Adds every byte moved to `count`.
///
/// On an error both sockets are shut down completely, which also ends the opposite pump.
pub(crate) fn pump(from: &TcpStream, to: &TcpStream, count: &AtomicU64) -> io::Result<()> {
    let result = pump_inner(from, to, count);
    match &result {
        Ok(()) => {
            let _ = to.shutdown(Shutdown::Write);
        }
        Err(_) => {
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        }
    }
    result
}

fn pump_inner(from: &TcpStream, to: &TcpStream, count: &AtomicU64) -> io::Result<()> {
    let (r, w) = pipe()?;
    loop {
        let n = splice(from, &w, CHUNK)?;
        if n == 0 {
            return Ok(());
        }
        let mut left = n;
        while left > 0 {
            let m = splice(&r, to, left)?;
            if m == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "peer stopped accepting data",
                ));
            }
            left -= m;
        }
        count.fetch_add(n as u64, Ordering::Relaxed);
    }
}
