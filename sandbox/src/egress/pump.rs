//! Moving bytes one way between two TCP sockets.
//!
//! Plain reads and writes through a 256 KiB buffer, not splice(2): measured on loopback with
//! large segments on the sandbox's `lo` (see `inside.rs`), a write of 256 KiB lets TCP build one
//! big segment, whereas spliced pages cap a segment at 17 page fragments (~68 KiB). Fewer packets
//! outweigh the copy: 0.6 s of CPU per GiB against 0.8 s for splice, end to end.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes moved per read; untouched pages of the buffer are never faulted in, so a connection
/// that carries small messages costs little memory.
const CHUNK: usize = 256 * 1024;

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

fn pump_inner(mut from: &TcpStream, mut to: &TcpStream, count: &AtomicU64) -> io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        count.fetch_add(n as u64, Ordering::Relaxed);
    }
}
