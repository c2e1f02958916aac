//! Host-side targets for escapes: loopback listeners that count what reaches them, unix sockets,
//! and victim processes holding a secret in their environment.

use std::net::{TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::User;

/// Counts the connections or datagrams a host listener received.
#[derive(Clone, Default)]
pub struct Hits(Arc<AtomicUsize>);

impl Hits {
    /// How many arrived so far.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    fn hit(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    /// A host-side check that nothing arrived after `before`.
    pub fn unchanged_since(&self, before: usize, what: &str) -> Result<(), String> {
        let now = self.count();
        if now == before {
            Ok(())
        } else {
            Err(format!(
                "the host {what} received {} contact(s)",
                now - before
            ))
        }
    }
}

/// A TCP listener on loopback (v4 or v6) that accepts and counts connections forever.
pub fn tcp_listener(v6: bool) -> (u16, Hits) {
    let listener = TcpListener::bind(if v6 { "[::1]:0" } else { "127.0.0.1:0" }).unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Hits::default();
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counter.hit();
            drop(stream);
        }
    });
    (port, hits)
}

/// A UDP echo server on loopback (v4 or v6) that counts datagrams.
pub fn udp_echo(v6: bool) -> (u16, Hits) {
    let socket = UdpSocket::bind(if v6 { "[::1]:0" } else { "127.0.0.1:0" }).unwrap();
    let port = socket.local_addr().unwrap().port();
    let hits = Hits::default();
    let counter = hits.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            counter.hit();
            let _ = socket.send_to(&buf[..n], from);
        }
    });
    (port, hits)
}

fn serve_unix(listener: UnixListener) -> Hits {
    let hits = Hits::default();
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counter.hit();
            drop(stream);
        }
    });
    hits
}

/// A listener on the abstract unix socket `@name`, counting connections.
pub fn abstract_listener(name: &str) -> Hits {
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    serve_unix(UnixListener::bind_addr(&addr).unwrap())
}

/// A listener on the pathname socket `path`, connectable by any user, counting connections.
pub fn path_listener(path: &Path) -> Hits {
    let listener = UnixListener::bind(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    serve_unix(listener)
}

/// A directory under `/run` (where the host's daemons keep their sockets), removed on drop.
pub struct RunDir(pub PathBuf);

impl RunDir {
    /// Creates `/run/toolpolicy-escapes-<unique>`, or explains why it cannot.
    pub fn create() -> Result<RunDir, String> {
        let path = tempfile::Builder::new()
            .prefix("toolpolicy-escapes-")
            .tempdir_in("/run")
            .map_err(|e| format!("cannot create a directory under /run: {e}"))?
            .keep();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Ok(RunDir(path))
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A host process (`sleep`) owned by the run's user, holding a secret environment variable;
/// killed on drop.
pub struct Victim {
    child: Child,
}

/// The name of the secret environment variable of a [`Victim`].
pub const SECRET_VAR: &str = "TOOLPOLICY_ESCAPE_SECRET";

impl Victim {
    /// Starts the victim as `user` with `SECRET_VAR=secret`.
    pub fn start(user: User, secret: &str) -> Victim {
        let mut argv = user.prefix();
        argv.extend(["sleep", "600"].map(String::from));
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .env(SECRET_VAR, secret)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start the victim process");
        // Wait until setpriv has exec'd sleep, so the pid and its environ are the victim's own,
        // and until that environ is in place: `exe` names the new program before `execve` has
        // laid out the new stack, and a read in between finds an empty environ.
        let pid = child.id();
        let needle = format!("{SECRET_VAR}={secret}");
        for _ in 0..1000 {
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let holds = environ
                .split(|b| *b == 0)
                .any(|entry| entry == needle.as_bytes());
            if exe.to_string_lossy().ends_with("/sleep") && holds {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        Victim { child }
    }

    /// The victim's pid on the host.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it is still running (not killed by an escaped signal).
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
