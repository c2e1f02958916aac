//! `escape-probe`: attempts exactly one sandbox escape and says whether it worked.
//!
//! The escape test suite (`tests/escapes.rs`) runs every subcommand twice: once on the bare host,
//! where the action must succeed (so the test is able to fail), and once under
//! `policy-sandbox run`, where it must be blocked. The probe therefore never decides what the
//! right outcome is; it only reports what the kernel did, in one stdout line:
//!
//! ```text
//! SUCCEEDED <action>: <detail>                                  exit 0
//! BLOCKED <action>: errno=13 EACCES (Permission denied) <detail> exit 10
//! ERROR <action>: <detail>                                      exit 2
//! STATUS NoNewPrivs=1 CapEff=0000000000000000                   exit 0
//! ```
//!
//! `ERROR` means the probe could not even attempt the escape (bad arguments, a setup step such as
//! creating the symlink failed); a test must treat it as a failure, never as "blocked". Before
//! the attempt the probe writes `escape-probe: attempting <action>` to stderr, so a test can tell
//! a blocked action from a probe that never started. A probe killed by a signal (seccomp, OOM)
//! prints no result line at all.
//!
//! It uses raw libc calls and no shell, so that what is tested is the syscall, not a library's
//! fallback.

#[path = "escape-probe/kernel_paths.rs"]
mod kernel_paths;
// The runner's own descriptor passing, for `pty-pass`.
#[path = "../fdpass.rs"]
#[allow(dead_code, unused_imports)]
mod fdpass;

use std::ffi::CString;
use std::io::{Error, Read, Write};
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

const EXIT_SUCCEEDED: u8 = 0;
const EXIT_BLOCKED: u8 = 10;
const EXIT_ERROR: u8 = 2;

/// The result of one attempt.
enum Outcome {
    Succeeded(String),
    Blocked { errno: i32, detail: String },
    Error(String),
    Status(String),
}

fn blocked(err: Error, detail: impl Into<String>) -> Outcome {
    Outcome::Blocked {
        errno: err.raw_os_error().unwrap_or(0),
        detail: detail.into(),
    }
}

/// Blocked without an errno: the action ran but did not have the escaping effect.
fn blocked_no_errno(detail: impl Into<String>) -> Outcome {
    Outcome::Blocked {
        errno: 0,
        detail: detail.into(),
    }
}

const USAGE: &str = "usage: escape-probe <action> [args]
actions:
  write PATH                      create/truncate PATH and write to it
  write-text PATH TEXT            open the existing PATH for writing and write TEXT in one call
                                  (a procfs setting or map, which takes one write)
  symlink-write TARGET LINK       create LINK -> TARGET, then write through LINK
  hardlink SRC DST                hard-link SRC (outside) to DST (inside a root)
  read PATH [NEEDLE]              read PATH (succeeds only if it contains NEEDLE, when given)
  tcp4 PORT | tcp6 PORT           TCP connect to 127.0.0.1 / ::1
  udp4 PORT | udp6 PORT           UDP round trip with an echo server on 127.0.0.1 / ::1
  unix-abstract NAME              connect to the abstract unix socket @NAME
  unix-path PATH                  connect to the pathname unix socket PATH
  ptrace parent|PID               PTRACE_ATTACH, wait for the stop, detach
  kill PID SIGNAL                 kill(PID, SIGNAL) (SIGNAL as a number)
  environ PID NEEDLE              read /proc/PID/environ; succeeds if it contains NEEDLE
  unshare-user                    unshare(CLONE_NEWUSER)
  unshare-user-x32                unshare(CLONE_NEWUSER) through the x32 syscall number
  unshare-user-mount DIR          unshare(CLONE_NEWUSER|CLONE_NEWNS), then mount tmpfs on DIR
  clone-user                      raw clone(CLONE_NEWUSER) syscall
  clone3-user                     raw clone3 with CLONE_NEWUSER
  mount-tmpfs DIR                 mount a tmpfs on DIR (and unmount it again)
  exec CODE PROG [ARGS...]        fork+execve PROG; succeeds if it exits with CODE
  copy-exec SRC DST CODE PROG [ARGS...]
                                  copy SRC to DST (mode 0755), then like exec
  exec-regs CODE R10 R8 R9 PROG [ARGS...]
                                  fork+execve PROG with R10, R8, R9 in the registers execve
                                  does not read; succeeds if it exits with CODE
  exec-memfd CODE SRC [ARGS...]   copy SRC into a memfd and execveat it; succeeds on exit CODE
  setpgid-regs R10 R8 R9          a forked child calls setpgid(0, 0) with R10, R8, R9 in the
                                  registers setpgid does not read; succeeds if it then leads a
                                  process group of its own
  io-uring                        io_uring_setup (an unfiltered path around seccomp)
  orphan PATH MS                  leave a detached grandchild that writes PATH after MS ms
  sibling PATH MS                 leave a child of the probe's parent (clone CLONE_PARENT)
                                  that writes PATH after MS ms
  setns-mnt PID                   join the mount namespace of PID (/proc/PID/ns/mnt)
  handle-of PATH                  print PATH's file handle (helper for open-by-handle)
  open-by-handle DIR TYPE HEX NEEDLE
                                  open_by_handle_at on DIR's mount; succeeds if the file holds
                                  NEEDLE (the shocker escape around paths)
  tiocsti TEXT                    push TEXT into the input of the terminal on stdin (TIOCSTI)
  fork-bomb N                     fork until N children exist (then kill them all)
  memory-hog MIB                  map and touch MIB MiB of anonymous memory
  fill PATH MIB                   write MIB MiB into the file PATH (a tmpfs fills memory)
  memfd-fill MIB                  write MIB MiB into a memfd (shared memory, not address space)
  posix-shm NAME                  shm_open + mmap and sem_open + post/wait of /NAME (/dev/shm)
  ipc-leave KIND NAME             create a System V shm segment, semaphore set or message queue
                                  (KIND shm, sem, msg; key from NAME) or the POSIX message queue
                                  /NAME (KIND mq), and leave it there
  ipc-status NAME                 print the IPC namespace, how many System V objects it holds
                                  and whether the POSIX message queue /NAME exists
  pty                             open a pty pair and pass a line through it
  pty-pass SOCKET                 open a pty and send its master over the unix socket SOCKET
  pts-status                      print /dev/pts's mount (unique id), its entries and the modes
                                  of /dev/pts and /dev/pts/ptmx
  mount-ids PATH...               print the unique id of the mount each PATH shows
  tmpfile DIR                     make an unnamed file in DIR (O_TMPFILE) and print its inode
  add-key NAME                    add a \"user\" key NAME to the user keyring (add_key), which
                                  lives as long as the user namespace
  find-key NAME                   search the user keyring for the \"user\" key NAME (keyctl);
                                  succeeds if it is there
  request-key NAME                the same through request_key (no upcall)
  make-remove PATH                create the file PATH, write to it and remove it
  list-later DIR                  wait 50 ms (past the clock's tick), then list DIR
  lo-up                           bring the network namespace's loopback interface up
  raw-socket                      open a raw IPv4 socket (ICMP)
  abstract-hold NAME READY SECS   bind and listen on @NAME, create the file READY, hold SECS s
  status                          print NoNewPrivs and CapEff of /proc/self/status, and the
                                  network namespace";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(action) = args.first().cloned() else {
        eprintln!("{USAGE}");
        return ExitCode::from(EXIT_ERROR);
    };
    eprintln!("escape-probe: attempting {action}");
    let outcome = run(&action, &args[1..]);
    let (line, code) = match outcome {
        Outcome::Succeeded(detail) => (format!("SUCCEEDED {action}: {detail}"), EXIT_SUCCEEDED),
        Outcome::Blocked { errno, detail } => (
            format!(
                "BLOCKED {action}: errno={errno} {} ({}) {detail}",
                errno_name(errno),
                if errno == 0 {
                    "no error code".to_string()
                } else {
                    let text = Error::from_raw_os_error(errno).to_string();
                    text.split(" (os error")
                        .next()
                        .unwrap_or_default()
                        .to_string()
                }
            ),
            EXIT_BLOCKED,
        ),
        Outcome::Error(detail) => (format!("ERROR {action}: {detail}"), EXIT_ERROR),
        Outcome::Status(line) => (line, EXIT_SUCCEEDED),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    ExitCode::from(code)
}

fn run(action: &str, args: &[String]) -> Outcome {
    let arg = |i: usize| -> Result<&str, Outcome> {
        args.get(i)
            .map(String::as_str)
            .ok_or_else(|| Outcome::Error(format!("missing argument {}\n{USAGE}", i + 1)))
    };
    let result = (|| -> Result<Outcome, Outcome> {
        Ok(match action {
            "write" => write_file(arg(0)?),
            "write-text" => write_text(arg(0)?, arg(1)?),
            "symlink-write" => symlink_write(arg(0)?, arg(1)?),
            "hardlink" => hardlink(arg(0)?, arg(1)?),
            "read" => read_file(arg(0)?, args.get(1).map(String::as_str)),
            "tcp4" => tcp(false, parse(arg(0)?)?),
            "tcp6" => tcp(true, parse(arg(0)?)?),
            "udp4" => udp(false, parse(arg(0)?)?),
            "udp6" => udp(true, parse(arg(0)?)?),
            "unix-abstract" => unix_connect(arg(0)?, true),
            "unix-path" => unix_connect(arg(0)?, false),
            "ptrace" => ptrace_attach(arg(0)?)?,
            "kill" => kill(parse(arg(0)?)?, parse(arg(1)?)?),
            "environ" => environ(parse(arg(0)?)?, arg(1)?),
            "unshare-user" => unshare_user(libc::SYS_unshare),
            "unshare-user-x32" => unshare_user(X32_SYSCALL_BIT | libc::SYS_unshare),
            "unshare-user-mount" => unshare_user_mount(arg(0)?),
            "clone-user" => clone_user(),
            "clone3-user" => clone3_user(),
            "mount-tmpfs" => mount_tmpfs(arg(0)?),
            "exec" => exec(parse(arg(0)?)?, arg(1)?, &args[2..]),
            "exec-regs" => exec_regs(
                parse(arg(0)?)?,
                [parse(arg(1)?)?, parse(arg(2)?)?, parse(arg(3)?)?],
                arg(4)?,
                &args[5..],
            ),
            "setpgid-regs" => setpgid_regs([parse(arg(0)?)?, parse(arg(1)?)?, parse(arg(2)?)?]),
            "copy-exec" => copy_exec(arg(0)?, arg(1)?, parse(arg(2)?)?, arg(3)?, &args[4..]),
            "exec-memfd" => exec_memfd(parse(arg(0)?)?, arg(1)?, &args[2..]),
            "io-uring" => io_uring(),
            "orphan" => orphan(arg(0)?, parse(arg(1)?)?),
            "sibling" => sibling(arg(0)?, parse(arg(1)?)?),
            "setns-mnt" => setns_mnt(arg(0)?),
            "handle-of" => handle_of(arg(0)?),
            "open-by-handle" => open_by_handle(arg(0)?, parse(arg(1)?)?, arg(2)?, arg(3)?),
            "tiocsti" => tiocsti(arg(0)?),
            "fork-bomb" => fork_bomb(parse(arg(0)?)?),
            "memory-hog" => memory_hog(parse(arg(0)?)?),
            "fill" => fill(arg(0)?, parse(arg(1)?)?),
            "memfd-fill" => memfd_fill(parse(arg(0)?)?),
            "posix-shm" => posix_shm(arg(0)?),
            "ipc-leave" => ipc_leave(arg(0)?, arg(1)?),
            "ipc-status" => ipc_status(arg(0)?),
            "pty" => pty(),
            "pty-pass" => pty_pass(arg(0)?),
            "pts-status" => pts_status(),
            "mount-ids" => mount_ids(args),
            "tmpfile" => tmpfile(arg(0)?),
            "add-key" => add_key(arg(0)?),
            "find-key" => find_key(arg(0)?),
            "request-key" => request_key(arg(0)?),
            "make-remove" => make_remove(arg(0)?),
            "list-later" => list_later(arg(0)?),
            "lo-up" => lo_up(),
            "raw-socket" => raw_socket(),
            "abstract-hold" => abstract_hold(arg(0)?, arg(1)?, parse(arg(2)?)?),
            "status" => status(),
            other => kernel_paths::run(other, args).unwrap_or_else(|| {
                Outcome::Error(format!(
                    "unknown action `{other}`\n{USAGE}{}",
                    kernel_paths::USAGE
                ))
            }),
        })
    })();
    result.unwrap_or_else(|e| e)
}

fn parse<T: std::str::FromStr>(s: &str) -> Result<T, Outcome> {
    s.parse()
        .map_err(|_| Outcome::Error(format!("`{s}` is not a valid number")))
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("arguments from argv contain no NUL")
}

/// Returns -1 as the last OS error, anything else as `Ok`.
fn check(ret: libc::c_long) -> Result<libc::c_long, Error> {
    if ret == -1 {
        Err(Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn write_file(path: &str) -> Outcome {
    match write_through(path) {
        Ok(n) => Outcome::Succeeded(format!("wrote {n} bytes to {path}")),
        Err(e) => blocked(e, format!("open/write {path}")),
    }
}

fn write_text(path: &str, text: &str) -> Outcome {
    let written = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut file| file.write(text.as_bytes()));
    match written {
        Ok(n) => Outcome::Succeeded(format!("wrote {n} bytes to {path}")),
        Err(e) => blocked(e, format!("open/write {path}")),
    }
}

fn write_through(path: &str) -> Result<usize, Error> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    let payload = b"escape-probe was here\n";
    file.write_all(payload)?;
    Ok(payload.len())
}

fn symlink_write(target: &str, link: &str) -> Outcome {
    let _ = std::fs::remove_file(link);
    if let Err(e) = std::os::unix::fs::symlink(target, link) {
        return Outcome::Error(format!(
            "could not create the symlink {link} -> {target} inside the write root: {e}"
        ));
    }
    match write_through(link) {
        Ok(n) => Outcome::Succeeded(format!("wrote {n} bytes to {target} through {link}")),
        Err(e) => blocked(e, format!("open/write through {link} -> {target}")),
    }
}

fn hardlink(src: &str, dst: &str) -> Outcome {
    let _ = std::fs::remove_file(dst);
    match std::fs::hard_link(src, dst) {
        Ok(()) => Outcome::Succeeded(format!("linked {src} as {dst}")),
        Err(e) => blocked(e, format!("link {src} -> {dst}")),
    }
}

fn read_file(path: &str, needle: Option<&str>) -> Outcome {
    let mut content = Vec::new();
    let read = std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut content));
    match (read, needle) {
        (Err(e), _) => blocked(e, format!("open/read {path}")),
        (Ok(n), None) => Outcome::Succeeded(format!("read {n} bytes from {path}")),
        (Ok(n), Some(needle)) if contains(&content, needle.as_bytes()) => {
            Outcome::Succeeded(format!("read {n} bytes from {path}, including the secret"))
        }
        (Ok(n), Some(_)) => blocked_no_errno(format!(
            "read {n} bytes from {path} without the secret in them"
        )),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// A socket fd closed on drop.
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the fd is owned by this wrapper and closed exactly once.
        unsafe { libc::close(self.0) };
    }
}

fn socket(domain: libc::c_int, ty: libc::c_int) -> Result<Fd, Error> {
    // SAFETY: plain syscall with integer arguments.
    let fd = unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, 0) };
    check(fd as libc::c_long).map(|_| Fd(fd))
}

/// A loopback socket address (127.0.0.1 or ::1) as raw bytes plus its length.
fn loopback(v6: bool, port: u16) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    if v6 {
        let mut addr: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
        addr.sin6_family = libc::AF_INET6 as libc::sa_family_t;
        addr.sin6_port = port.to_be();
        addr.sin6_addr.s6_addr[15] = 1;
        // SAFETY: sockaddr_in6 fits in sockaddr_storage, both are POD.
        unsafe { std::ptr::write((&mut storage as *mut _) as *mut libc::sockaddr_in6, addr) };
        (
            storage,
            std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
        )
    } else {
        let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = port.to_be();
        addr.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
        // SAFETY: sockaddr_in fits in sockaddr_storage, both are POD.
        unsafe { std::ptr::write((&mut storage as *mut _) as *mut libc::sockaddr_in, addr) };
        (
            storage,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    }
}

fn connect(fd: &Fd, addr: &libc::sockaddr_storage, len: libc::socklen_t) -> Result<(), Error> {
    // SAFETY: addr points to a valid socket address of `len` bytes.
    let ret = unsafe { libc::connect(fd.0, (addr as *const _) as *const libc::sockaddr, len) };
    check(ret as libc::c_long).map(drop)
}

fn tcp(v6: bool, port: u16) -> Outcome {
    let host = if v6 { "[::1]" } else { "127.0.0.1" };
    let domain = if v6 { libc::AF_INET6 } else { libc::AF_INET };
    let result = socket(domain, libc::SOCK_STREAM).and_then(|fd| {
        let (addr, len) = loopback(v6, port);
        connect(&fd, &addr, len)?;
        // SAFETY: writes a static buffer to an owned socket.
        let ret = unsafe { libc::send(fd.0, b"probe\n".as_ptr().cast(), 6, libc::MSG_NOSIGNAL) };
        check(ret as libc::c_long).map(drop)
    });
    match result {
        Ok(()) => Outcome::Succeeded(format!("connected to {host}:{port} and sent data")),
        Err(e) => blocked(e, format!("socket/connect/send to {host}:{port}")),
    }
}

fn udp(v6: bool, port: u16) -> Outcome {
    let host = if v6 { "[::1]" } else { "127.0.0.1" };
    let domain = if v6 { libc::AF_INET6 } else { libc::AF_INET };
    let nonce = format!("probe-{}-{}", std::process::id(), port);
    let result = socket(domain, libc::SOCK_DGRAM).and_then(|fd| {
        let timeout = libc::timeval {
            tv_sec: 2,
            tv_usec: 0,
        };
        // SAFETY: timeval is a valid SO_RCVTIMEO argument of the given size.
        let ret = unsafe {
            libc::setsockopt(
                fd.0,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        check(ret as libc::c_long)?;
        let (addr, len) = loopback(v6, port);
        // Connecting the datagram socket makes an ICMP port-unreachable come back as
        // ECONNREFUSED instead of a silent timeout.
        connect(&fd, &addr, len)?;
        // SAFETY: sends an owned buffer on an owned socket.
        let ret = unsafe { libc::send(fd.0, nonce.as_ptr().cast(), nonce.len(), 0) };
        check(ret as libc::c_long)?;
        let mut buf = [0u8; 256];
        // SAFETY: receives into an owned buffer of the given size.
        let n = unsafe { libc::recv(fd.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
        let n = check(n as libc::c_long)? as usize;
        Ok(buf[..n] == *nonce.as_bytes())
    });
    match result {
        Ok(true) => Outcome::Succeeded(format!("UDP round trip with {host}:{port}")),
        Ok(false) => blocked_no_errno(format!("a reply from {host}:{port} that is not the echo")),
        Err(e) => blocked(e, format!("UDP send/receive with {host}:{port}")),
    }
}

/// Sets `IFF_UP` on `lo`: only a holder of `CAP_NET_ADMIN` over the network namespace can.
fn lo_up() -> Outcome {
    let result = socket(libc::AF_INET, libc::SOCK_DGRAM).and_then(|fd| {
        // SAFETY: an all-zero ifreq is valid; the ioctls read and write only this struct.
        unsafe {
            let mut req: libc::ifreq = std::mem::zeroed();
            req.ifr_name[0] = b'l' as libc::c_char;
            req.ifr_name[1] = b'o' as libc::c_char;
            check(libc::ioctl(fd.0, libc::SIOCGIFFLAGS, &mut req) as libc::c_long)?;
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            check(libc::ioctl(fd.0, libc::SIOCSIFFLAGS, &req) as libc::c_long).map(drop)
        }
    });
    match result {
        Ok(()) => Outcome::Succeeded("brought lo up".into()),
        Err(e) => blocked(e, "ioctl(SIOCSIFFLAGS, lo up)"),
    }
}

/// A raw ICMP socket: only a holder of `CAP_NET_RAW` over the network namespace gets one.
fn raw_socket() -> Outcome {
    // SAFETY: plain syscall with integer arguments.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::IPPROTO_ICMP,
        )
    };
    match check(fd as libc::c_long).map(|_| Fd(fd)) {
        Ok(_) => Outcome::Succeeded("opened a raw ICMP socket".into()),
        Err(e) => blocked(e, "socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)"),
    }
}

/// Holds `@name` for `secs` seconds, with `ready` created once it listens: another run can
/// then try to reach it, or to take the same name.
fn abstract_hold(name: &str, ready: &str, secs: u64) -> Outcome {
    let (addr, len) = match unix_address(name, true) {
        Ok(a) => a,
        Err(outcome) => return outcome,
    };
    let held = socket(libc::AF_UNIX, libc::SOCK_STREAM).and_then(|fd| {
        // SAFETY: addr is a valid sockaddr_un of at least `len` bytes.
        check(
            unsafe { libc::bind(fd.0, (&addr as *const libc::sockaddr_un).cast(), len) }
                as libc::c_long,
        )?;
        // SAFETY: listening on our own socket.
        check(unsafe { libc::listen(fd.0, 8) } as libc::c_long)?;
        Ok(fd)
    });
    let fd = match held {
        Ok(fd) => fd,
        Err(e) => return blocked(e, format!("bind @{name}")),
    };
    if let Err(e) = std::fs::write(ready, b"listening") {
        return Outcome::Error(format!("cannot create {ready}: {e}"));
    }
    std::thread::sleep(std::time::Duration::from_secs(secs));
    drop(fd);
    Outcome::Succeeded(format!("held @{name} for {secs} s in {}", net_namespace()))
}

/// The network namespace, as `/proc/self/ns/net` names it.
fn net_namespace() -> String {
    std::fs::read_link("/proc/self/ns/net")
        .map(|p| p.display().to_string())
        .unwrap_or_else(|e| format!("unknown ({e})"))
}

/// The cookie of this process's network namespace (`SO_NETNS_COOKIE` of a unix socket): unlike
/// its inode number, which the kernel hands to a later namespace once this one is freed, a
/// cookie is never reused while the system runs.
fn net_cookie() -> String {
    const SO_NETNS_COOKIE: libc::c_int = 71;
    // SAFETY: a socket of our own, a u64 buffer of the size passed, closed once.
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return format!("unknown (socket: {})", std::io::Error::last_os_error());
        }
        let mut cookie: u64 = 0;
        let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
        let rc = libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_NETNS_COOKIE,
            (&mut cookie as *mut u64).cast(),
            &mut len,
        );
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if rc != 0 {
            return format!("unknown (SO_NETNS_COOKIE: {err})");
        }
        cookie.to_string()
    }
}

/// A unix socket address: `@name` in the abstract namespace, or a path.
fn unix_address(
    name: &str,
    abstract_ns: bool,
) -> Result<(libc::sockaddr_un, libc::socklen_t), Outcome> {
    // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let offset = usize::from(abstract_ns);
    if name.len() + offset >= addr.sun_path.len() {
        return Err(Outcome::Error(format!(
            "socket name {} is too long",
            shown_name(name, abstract_ns)
        )));
    }
    for (i, b) in name.bytes().enumerate() {
        addr.sun_path[i + offset] = b as libc::c_char;
    }
    let base = std::mem::size_of::<libc::sa_family_t>();
    let len = if abstract_ns {
        base + 1 + name.len()
    } else {
        base + name.len() + 1
    } as libc::socklen_t;
    Ok((addr, len))
}

fn shown_name(name: &str, abstract_ns: bool) -> String {
    if abstract_ns {
        format!("@{name}")
    } else {
        name.to_string()
    }
}

fn unix_connect(name: &str, abstract_ns: bool) -> Outcome {
    let shown = shown_name(name, abstract_ns);
    let (addr, len) = match unix_address(name, abstract_ns) {
        Ok(a) => a,
        Err(outcome) => return outcome,
    };
    let result = socket(libc::AF_UNIX, libc::SOCK_STREAM).and_then(|fd| {
        // SAFETY: addr is a valid sockaddr_un of at least `len` bytes.
        let ret = unsafe { libc::connect(fd.0, (&addr as *const libc::sockaddr_un).cast(), len) };
        check(ret as libc::c_long).map(drop)
    });
    match result {
        Ok(()) => Outcome::Succeeded(format!("connected to {shown}")),
        Err(e) => blocked(e, format!("connect to {shown}")),
    }
}

fn ptrace_attach(target: &str) -> Result<Outcome, Outcome> {
    let pid: libc::pid_t = if target == "parent" {
        // SAFETY: getppid cannot fail.
        unsafe { libc::getppid() }
    } else {
        parse(target)?
    };
    let null = std::ptr::null_mut::<libc::c_void>();
    // SAFETY: PTRACE_ATTACH takes a pid and ignores addr/data.
    let ret = unsafe { libc::ptrace(libc::PTRACE_ATTACH, pid, null, null) };
    if let Err(e) = check(ret) {
        return Ok(blocked(e, format!("PTRACE_ATTACH to {target} (pid {pid})")));
    }
    let mut status = 0;
    // SAFETY: waits for the tracee's attach stop; __WALL also covers non-children.
    unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
    // SAFETY: detaches from a tracee we attached to, without delivering a signal.
    unsafe { libc::ptrace(libc::PTRACE_DETACH, pid, null, null) };
    Ok(Outcome::Succeeded(format!(
        "attached to {target} (pid {pid}) and detached"
    )))
}

fn kill(pid: libc::pid_t, signal: libc::c_int) -> Outcome {
    // SAFETY: plain syscall with integer arguments.
    match check(unsafe { libc::kill(pid, signal) } as libc::c_long) {
        Ok(_) => Outcome::Succeeded(format!("sent signal {signal} to pid {pid}")),
        Err(e) => blocked(e, format!("kill({pid}, {signal})")),
    }
}

fn environ(pid: libc::pid_t, needle: &str) -> Outcome {
    read_file(&format!("/proc/{pid}/environ"), Some(needle))
}

/// x32 system calls are the x86_64 numbers with this bit set; a filter that only checks the
/// architecture lets them through.
const X32_SYSCALL_BIT: libc::c_long = 0x4000_0000;

fn unshare_user(nr: libc::c_long) -> Outcome {
    // SAFETY: unshare takes one integer flag argument.
    match check(unsafe { libc::syscall(nr, libc::CLONE_NEWUSER as libc::c_long) }) {
        Ok(_) => Outcome::Succeeded(format!("syscall {nr:#x}: new user namespace")),
        Err(e) => blocked(e, format!("unshare(CLONE_NEWUSER) as syscall {nr:#x}")),
    }
}

fn unshare_user_mount(dir: &str) -> Outcome {
    let flags = (libc::CLONE_NEWUSER | libc::CLONE_NEWNS) as libc::c_long;
    // SAFETY: unshare takes one integer flag argument.
    if let Err(e) = check(unsafe { libc::syscall(libc::SYS_unshare, flags) }) {
        return blocked(e, "unshare(CLONE_NEWUSER|CLONE_NEWNS)");
    }
    // The new mount namespace is owned by a less privileged user namespace, so its mounts are
    // slaves of the host's and nothing propagates back.
    mount_tmpfs(dir)
}

/// Runs in the child of a raw clone: leave at once, touching nothing the parent owns.
fn child_exit() -> ! {
    // SAFETY: _exit is async-signal-safe and does not run destructors.
    unsafe { libc::_exit(0) }
}

fn reap(pid: libc::c_long, what: &str) -> Outcome {
    let mut status = 0;
    // SAFETY: waits for our own child.
    unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
    Outcome::Succeeded(format!(
        "{what} created child {pid} in a new user namespace"
    ))
}

fn clone_user() -> Outcome {
    let flags = (libc::CLONE_NEWUSER | libc::SIGCHLD) as libc::c_long;
    // SAFETY: a fork-like clone (no CLONE_VM, null stack); the child only calls _exit.
    let ret = unsafe { libc::syscall(libc::SYS_clone, flags, 0, 0, 0, 0) };
    match check(ret) {
        Ok(0) => child_exit(),
        Ok(pid) => reap(pid, "clone"),
        Err(e) => blocked(e, "clone(CLONE_NEWUSER)"),
    }
}

fn clone3_user() -> Outcome {
    // struct clone_args, version 0 (64 bytes): flags, pidfd, child_tid, parent_tid,
    // exit_signal, stack, stack_size, tls.
    let mut args = [0u64; 8];
    args[0] = libc::CLONE_NEWUSER as u64;
    args[4] = libc::SIGCHLD as u64;
    // SAFETY: a fork-like clone3 (no CLONE_VM, no stack); the child only calls _exit.
    let ret = unsafe { libc::syscall(libc::SYS_clone3, args.as_mut_ptr(), 64usize) };
    match check(ret) {
        Ok(0) => child_exit(),
        Ok(pid) => reap(pid, "clone3"),
        Err(e) => blocked(e, "clone3(CLONE_NEWUSER)"),
    }
}

fn mount_tmpfs(dir: &str) -> Outcome {
    let (source, target, fstype, data) = (cstr("none"), cstr(dir), cstr("tmpfs"), cstr("size=1m"));
    // SAFETY: all pointers are valid NUL-terminated strings.
    let ret = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            data.as_ptr().cast(),
        )
    };
    match check(ret as libc::c_long) {
        Ok(_) => {
            // SAFETY: unmounts what we just mounted.
            unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
            Outcome::Succeeded(format!("mounted a tmpfs on {dir}"))
        }
        Err(e) => blocked(e, format!("mount tmpfs on {dir}")),
    }
}

fn exec(expect: i32, prog: &str, args: &[String]) -> Outcome {
    let path = cstr(prog);
    run_child(expect, prog, args, |argv, envp| {
        // SAFETY: argv/envp are NULL-terminated arrays of valid C strings.
        unsafe { libc::execve(path.as_ptr(), argv, envp) };
    })
}

/// `execve` with chosen values in the three registers it does not read (`r10`, `r8`, `r9`),
/// where the hardened command's own `execve` carries the tail's secret.
fn exec_regs(expect: i32, registers: [u64; 3], prog: &str, args: &[String]) -> Outcome {
    let path = cstr(prog);
    run_child(expect, prog, args, |argv, envp| {
        // SAFETY: argv/envp are NULL-terminated arrays of valid C strings.
        unsafe { sandbox::seccomp::execve_sealed(path.as_ptr(), argv, envp, registers) };
    })
}

/// A forked child tries to leave the probe's process group: `setpgid(0, 0)` with `registers`
/// where the hardened tail looks for its secret. It exits 0 once it leads a group of its own,
/// or with the call's errno.
fn setpgid_regs(registers: [u64; 3]) -> Outcome {
    // SAFETY: the child makes system calls only, then _exit.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        return Outcome::Error(format!("fork: {}", Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: system calls with integer arguments.
        unsafe {
            let r = sandbox::seccomp::setpgid_sealed(registers);
            let code = if r == 0 && libc::getpgid(0) == libc::getpid() {
                0
            } else if r == 0 {
                125
            } else {
                *libc::__errno_location()
            };
            libc::_exit(code);
        }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    match libc::WEXITSTATUS(status) {
        0 if libc::WIFEXITED(status) => {
            Outcome::Succeeded("a child left the group and leads its own".into())
        }
        125 => Outcome::Error("setpgid returned 0 but the child leads no group".into()),
        errno => Outcome::Blocked {
            errno,
            detail: "setpgid(0, 0) in a forked child".into(),
        },
    }
}

fn exec_memfd(expect: i32, src: &str, args: &[String]) -> Outcome {
    let content = match std::fs::read(src) {
        Ok(c) => c,
        Err(e) => return Outcome::Error(format!("cannot read {src} to copy it: {e}")),
    };
    let name = cstr("escape-probe");
    // SAFETY: memfd_create with a valid name; checked below.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return blocked(Error::last_os_error(), "memfd_create");
    }
    let fd = Fd(fd);
    // SAFETY: writes an owned buffer to an owned fd.
    let written = unsafe { libc::write(fd.0, content.as_ptr().cast(), content.len()) };
    if written != content.len() as isize {
        return Outcome::Error(format!(
            "short write to the memfd: {}",
            Error::last_os_error()
        ));
    }
    let empty = cstr("");
    let shown = format!("memfd copy of {src}");
    run_child(expect, &shown, args, |argv, envp| {
        // SAFETY: execveat on an owned fd with AT_EMPTY_PATH and valid argv/envp. A shell
        // script would need the fd after exec, but the copied program is an ELF binary.
        unsafe {
            libc::syscall(
                libc::SYS_execveat,
                fd.0,
                empty.as_ptr(),
                argv,
                envp,
                libc::AT_EMPTY_PATH,
            )
        };
    })
}

/// Forks; the child calls `do_exec` (which returns only on failure); the parent reports whether
/// the program ran and exited with `expect`.
fn run_child(
    expect: i32,
    prog: &str,
    args: &[String],
    do_exec: impl Fn(*const *const libc::c_char, *const *const libc::c_char),
) -> Outcome {
    let mut argv_c: Vec<CString> = vec![cstr(prog)];
    argv_c.extend(args.iter().map(|a| cstr(a)));
    let mut argv: Vec<*const libc::c_char> = argv_c.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let env_c: Vec<CString> = std::env::vars_os()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).expect("environment entries contain no NUL")
        })
        .collect();
    let mut envp: Vec<*const libc::c_char> = env_c.iter().map(|e| e.as_ptr()).collect();
    envp.push(std::ptr::null());

    // The child reports a failed execve through a close-on-exec pipe: an empty read means the
    // exec itself succeeded.
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    if let Err(e) = check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } as _) {
        return Outcome::Error(format!("pipe2: {e}"));
    }
    let (rd, wr) = (Fd(fds[0]), Fd(fds[1]));
    // SAFETY: the child only calls async-signal-safe functions before execve/_exit.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        return Outcome::Error(format!("fork: {}", Error::last_os_error()));
    }
    if pid == 0 {
        do_exec(argv.as_ptr(), envp.as_ptr());
        // SAFETY: only async-signal-safe calls between a failed exec and _exit.
        unsafe {
            let errno = *libc::__errno_location();
            libc::write(wr.0, (&errno as *const i32).cast(), 4);
            libc::_exit(127);
        }
    }
    drop(wr);
    let mut buf = [0u8; 4];
    // SAFETY: reads into an owned 4-byte buffer.
    let n = unsafe { libc::read(rd.0, buf.as_mut_ptr().cast(), 4) };
    let mut status = 0;
    // SAFETY: waits for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if n == 4 {
        return Outcome::Blocked {
            errno: i32::from_ne_bytes(buf),
            detail: format!("exec of {prog}"),
        };
    }
    let shown = format!("{prog} {}", args.join(" "));
    if libc::WIFEXITED(status) {
        let code = libc::WEXITSTATUS(status);
        if code == expect {
            Outcome::Succeeded(format!("ran `{shown}` (exit {code})"))
        } else {
            blocked_no_errno(format!(
                "execve of {prog} returned success but `{shown}` exited {code}, not {expect}"
            ))
        }
    } else {
        blocked_no_errno(format!(
            "`{shown}` was killed by signal {}",
            libc::WTERMSIG(status)
        ))
    }
}

fn copy_exec(src: &str, dst: &str, expect: i32, prog: &str, args: &[String]) -> Outcome {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(dst);
    // Created executable in the open itself, with no chmod: a root runner's hardened filter
    // refuses every metadata write, and the attack must not depend on one.
    let copied = std::fs::read(src).and_then(|bytes| {
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .open(dst)?;
        std::io::Write::write_all(&mut out, &bytes)
    });
    if let Err(e) = copied {
        return Outcome::Error(format!(
            "could not copy {src} to {dst} (the write root should allow it): {e}"
        ));
    }
    exec(expect, prog, args)
}

fn io_uring() -> Outcome {
    // struct io_uring_params is 120 bytes; all-zero asks for defaults.
    let mut params = [0u8; 120];
    // SAFETY: io_uring_setup writes into the 120-byte params buffer.
    let ret = unsafe { libc::syscall(libc::SYS_io_uring_setup, 4u32, params.as_mut_ptr()) };
    match check(ret) {
        Ok(fd) => {
            drop(Fd(fd as libc::c_int));
            Outcome::Succeeded("io_uring_setup returned a ring".into())
        }
        Err(e) => blocked(e, "io_uring_setup"),
    }
}

fn orphan(path: &str, delay_ms: u64) -> Outcome {
    let target = cstr(path);
    // SAFETY: the children only call async-signal-safe functions before _exit.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        return Outcome::Error(format!("fork: {}", Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: async-signal-safe calls only; the grandchild detaches from the session and
        // is reparented once the child exits.
        unsafe {
            libc::setsid();
            if libc::fork() != 0 {
                libc::_exit(0);
            }
            outlive(&target, delay_ms);
        }
    }
    // SAFETY: reaps the intermediate child.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    Outcome::Succeeded(format!(
        "left a detached grandchild that writes {path} in {delay_ms} ms"
    ))
}

/// In a forked process (only there: it ends the process): closes the standard streams, waits
/// `delay_ms`, then writes a mark to `target` (the test looks for it after the run).
fn outlive(target: &std::ffi::CStr, delay_ms: u64) -> ! {
    let ts = libc::timespec {
        tv_sec: (delay_ms / 1000) as libc::time_t,
        tv_nsec: ((delay_ms % 1000) * 1_000_000) as libc::c_long,
    };
    // SAFETY: async-signal-safe calls on our own descriptors and a valid path and timespec.
    unsafe {
        for fd in 0..3 {
            libc::close(fd);
        }
        libc::nanosleep(&ts, std::ptr::null_mut());
        let fd = libc::open(
            target.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            0o644,
        );
        if fd >= 0 {
            libc::write(fd, b"orphan outlived the run\n".as_ptr().cast(), 24);
        }
        libc::_exit(0)
    }
}

/// A process the probe's parent owns, not the probe: `clone(CLONE_PARENT)` makes it the
/// probe's sibling, so no reaping or subreaper below the probe's parent sees it.
fn sibling(path: &str, delay_ms: u64) -> Outcome {
    let target = cstr(path);
    // SAFETY: a fork-like clone (no CLONE_VM, no new stack); the child only calls
    // async-signal-safe functions before _exit.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::CLONE_PARENT | libc::SIGCHLD,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        return blocked(Error::last_os_error(), "clone(CLONE_PARENT)");
    }
    if pid == 0 {
        outlive(&target, delay_ms);
    }
    Outcome::Succeeded(format!(
        "left a sibling (pid {pid}) that writes {path} in {delay_ms} ms"
    ))
}

fn setns_mnt(pid: &str) -> Outcome {
    let path = format!("/proc/{pid}/ns/mnt");
    let fd = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) => return blocked(e, format!("open {path}")),
    };
    use std::os::fd::AsRawFd;
    // SAFETY: setns on an fd we own; the probe is single-threaded, as joining a mount
    // namespace requires.
    match check(unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNS) } as libc::c_long) {
        Ok(_) => Outcome::Succeeded(format!("joined the mount namespace of pid {pid}")),
        Err(e) => blocked(e, format!("setns({path})")),
    }
}

/// `struct file_handle` with room for the largest handle (MAX_HANDLE_SZ = 128).
#[repr(C)]
struct FileHandle {
    handle_bytes: u32,
    handle_type: i32,
    f_handle: [u8; 128],
}

fn handle_of(path: &str) -> Outcome {
    let mut handle = FileHandle {
        handle_bytes: 128,
        handle_type: 0,
        f_handle: [0; 128],
    };
    let mut mount_id = 0;
    let c_path = cstr(path);
    // SAFETY: the handle buffer is as large as handle_bytes says.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            libc::AT_FDCWD,
            c_path.as_ptr(),
            &mut handle as *mut FileHandle,
            &mut mount_id as *mut libc::c_int,
            0,
        )
    };
    if let Err(e) = check(ret) {
        return Outcome::Error(format!("name_to_handle_at({path}): {e}"));
    }
    let hex: String = handle.f_handle[..handle.handle_bytes as usize]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Outcome::Status(format!("HANDLE {} {hex}", handle.handle_type))
}

fn open_by_handle(dir: &str, handle_type: i32, hex: &str, needle: &str) -> Outcome {
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    let Some(bytes) = bytes.filter(|b| !b.is_empty() && b.len() <= 128) else {
        return Outcome::Error(format!("`{hex}` is not a file handle in hex"));
    };
    let mut handle = FileHandle {
        handle_bytes: bytes.len() as u32,
        handle_type,
        f_handle: [0; 128],
    };
    handle.f_handle[..bytes.len()].copy_from_slice(&bytes);
    let mount = match std::fs::File::open(dir) {
        Ok(f) => f,
        Err(e) => return Outcome::Error(format!("cannot open {dir} as the mount reference: {e}")),
    };
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: a valid mount fd and a handle of the declared size.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_open_by_handle_at,
            mount.as_raw_fd(),
            &mut handle as *mut FileHandle,
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    let fd = match check(ret) {
        Ok(fd) => fd as libc::c_int,
        Err(e) => return blocked(e, "open_by_handle_at"),
    };
    // SAFETY: the fd was just returned to us.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut content = Vec::new();
    match file.read_to_end(&mut content) {
        Ok(_) if contains(&content, needle.as_bytes()) => {
            Outcome::Succeeded("read the secret through a file handle".into())
        }
        Ok(n) => blocked_no_errno(format!(
            "opened a handle but read {n} bytes without the secret"
        )),
        Err(e) => blocked(e, "read through the file handle"),
    }
}

fn tiocsti(text: &str) -> Outcome {
    for byte in text.bytes().chain(std::iter::once(b'\n')) {
        // SAFETY: TIOCSTI reads one byte from the pointer.
        let ret = unsafe { libc::ioctl(0, libc::TIOCSTI, &byte as *const u8) };
        if let Err(e) = check(ret as libc::c_long) {
            return blocked(e, "ioctl(0, TIOCSTI)");
        }
    }
    Outcome::Succeeded(format!("pushed {text:?} into the terminal's input"))
}

fn fork_bomb(target: usize) -> Outcome {
    let mut children = Vec::new();
    let mut failure = None;
    while children.len() < target {
        // SAFETY: the child only calls async-signal-safe functions.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: prctl/pause/_exit are async-signal-safe; the child dies with the probe.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                loop {
                    libc::pause();
                }
            }
        }
        if pid == -1 {
            failure = Some(Error::last_os_error());
            break;
        }
        children.push(pid);
    }
    let forked = children.len();
    for &pid in &children {
        // SAFETY: kills and reaps our own children.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
    match failure {
        None => Outcome::Succeeded(format!("forked {forked} of {target} processes")),
        Some(e) => blocked(
            e,
            format!("fork failed after {forked} of {target} processes"),
        ),
    }
}

fn memory_hog(mib: usize) -> Outcome {
    let len = mib << 20;
    // SAFETY: anonymous private mapping; checked for MAP_FAILED below.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return blocked(Error::last_os_error(), format!("mmap of {mib} MiB"));
    }
    let base = ptr.cast::<u8>();
    for offset in (0..len).step_by(4096) {
        // SAFETY: offset < len, inside the mapping; volatile so the touch is not optimized out.
        unsafe { std::ptr::write_volatile(base.add(offset), 1) };
    }
    // SAFETY: unmaps exactly the mapping created above.
    unsafe { libc::munmap(ptr, len) };
    Outcome::Succeeded(format!("mapped and touched {mib} MiB"))
}

/// Writes `mib` MiB into `fd` in 1 MiB chunks; the first failure is the outcome.
fn write_mib(fd: i32, mib: usize, what: &str) -> Outcome {
    let chunk = vec![0x5au8; 1 << 20];
    for done in 0..mib {
        let mut off = 0;
        while off < chunk.len() {
            // SAFETY: writing from a live buffer of the given length.
            let n = unsafe { libc::write(fd, chunk[off..].as_ptr().cast(), chunk.len() - off) };
            if n < 0 {
                return blocked(Error::last_os_error(), format!("{what} after {done} MiB"));
            }
            off += n as usize;
        }
    }
    Outcome::Succeeded(format!("{what}: held {mib} MiB"))
}

fn fill(path: &str, mib: usize) -> Outcome {
    let file = match std::fs::File::create(path) {
        Ok(f) => f,
        Err(e) => return blocked(e, format!("create {path}")),
    };
    use std::os::fd::AsRawFd;
    write_mib(file.as_raw_fd(), mib, path)
}

fn memfd_fill(mib: usize) -> Outcome {
    let name = CString::new("probe").unwrap();
    // SAFETY: memfd_create with a valid name.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return blocked(Error::last_os_error(), "memfd_create");
    }
    write_mib(fd, mib, "memfd")
}

fn posix_shm(name: &str) -> Outcome {
    let shm = CString::new(format!("/{name}")).unwrap();
    let sem = CString::new(format!("/{name}-sem")).unwrap();
    // SAFETY: POSIX shm and semaphore calls with valid names; the mapping is checked, used
    // within its length and unmapped.
    unsafe {
        let fd = libc::shm_open(shm.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o600);
        if fd < 0 {
            return blocked(Error::last_os_error(), format!("shm_open /{name}"));
        }
        if libc::ftruncate(fd, 4096) != 0 {
            return blocked(Error::last_os_error(), "ftruncate of the shm object");
        }
        let map = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        if map == libc::MAP_FAILED {
            return blocked(Error::last_os_error(), "mmap of the shm object");
        }
        std::ptr::write_volatile(map.cast::<u8>(), 42);
        libc::munmap(map, 4096);
        libc::close(fd);
        libc::shm_unlink(shm.as_ptr());
        let s = libc::sem_open(
            sem.as_ptr(),
            libc::O_CREAT,
            0o600 as libc::c_uint,
            0 as libc::c_uint,
        );
        if s == libc::SEM_FAILED {
            return blocked(Error::last_os_error(), format!("sem_open /{name}-sem"));
        }
        if libc::sem_post(s) != 0 || libc::sem_wait(s) != 0 {
            return blocked(Error::last_os_error(), "sem_post/sem_wait");
        }
        libc::sem_close(s);
        libc::sem_unlink(sem.as_ptr());
    }
    Outcome::Succeeded(format!("shared memory and a semaphore under /{name}"))
}

/// A System V key from `name`, the same in every run.
fn sysv_key(name: &str) -> libc::key_t {
    name.bytes()
        .fold(0x7000_0000u32, |k, b| k.rotate_left(5) ^ u32::from(b)) as libc::key_t
}

fn ipc_leave(kind: &str, name: &str) -> Outcome {
    let key = sysv_key(name);
    let flags = libc::IPC_CREAT | 0o600;
    // SAFETY: System V and POSIX IPC calls with integer arguments and a valid C string; the
    // message queue's descriptor is closed, the object itself left on purpose.
    let made = unsafe {
        match kind {
            "shm" => libc::shmget(key, 4096, flags),
            "sem" => libc::semget(key, 1, flags),
            "msg" => libc::msgget(key, flags),
            "mq" => {
                let path = CString::new(format!("/{name}")).unwrap();
                let mq = libc::mq_open(
                    path.as_ptr(),
                    libc::O_CREAT | libc::O_RDWR,
                    0o600 as libc::mode_t,
                    std::ptr::null_mut::<libc::mq_attr>(),
                );
                if mq >= 0 {
                    libc::mq_close(mq);
                }
                mq
            }
            other => return Outcome::Error(format!("unknown IPC kind {other}")),
        }
    };
    if made < 0 {
        let error = Error::last_os_error();
        // Landlock refuses the open that follows a queue's creation, not the creation.
        if kind == "mq" && queue_state(name) == "present" {
            return Outcome::Succeeded(format!(
                "left a mq object {name} behind (mq_open answered {error})"
            ));
        }
        return blocked(error, format!("create a {kind} object {name}"));
    }
    Outcome::Succeeded(format!("left a {kind} object {name} behind"))
}

/// Whether the POSIX message queue `/name` exists: `present`, `absent` or `unknown(errno)`. An
/// open that Landlock refuses (`EACCES`) found the queue: the name is looked up first.
fn queue_state(name: &str) -> String {
    let path = CString::new(format!("/{name}")).unwrap();
    // SAFETY: mq_open without O_CREAT on a valid C string; a descriptor found is closed.
    unsafe {
        let mq = libc::mq_open(path.as_ptr(), libc::O_RDONLY);
        if mq >= 0 {
            libc::mq_close(mq);
            return "present".to_string();
        }
    }
    match Error::last_os_error().raw_os_error() {
        Some(libc::EACCES) => "present".to_string(),
        Some(libc::ENOENT) => "absent".to_string(),
        e => format!("unknown({e:?})"),
    }
}

fn ipc_status(name: &str) -> Outcome {
    // Objects listed after each file's heading; `unknown` when a file cannot be read.
    let counts: Option<Vec<usize>> = ["shm", "sem", "msg"]
        .iter()
        .map(|kind| {
            std::fs::read_to_string(format!("/proc/sysvipc/{kind}"))
                .ok()
                .map(|text| text.lines().count().saturating_sub(1))
        })
        .collect();
    let objects = counts.map_or("unknown".to_string(), |c| {
        c.iter().sum::<usize>().to_string()
    });
    let queue = queue_state(name);
    let ns = std::fs::read_link("/proc/self/ns/ipc")
        .map(|p| p.display().to_string())
        .unwrap_or_else(|e| format!("unknown({e})"));
    Outcome::Status(format!(
        "STATUS IpcNs={ns} SysvObjects={objects} Mq={queue}"
    ))
}

fn pty() -> Outcome {
    // SAFETY: the pty calls get valid flags and buffers; descriptors are closed at exit.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        if master < 0 {
            return blocked(Error::last_os_error(), "posix_openpt (/dev/ptmx)");
        }
        if libc::grantpt(master) != 0 || libc::unlockpt(master) != 0 {
            return blocked(Error::last_os_error(), "grantpt/unlockpt");
        }
        let mut name = [0 as libc::c_char; 128];
        if libc::ptsname_r(master, name.as_mut_ptr(), name.len()) != 0 {
            return blocked(Error::last_os_error(), "ptsname");
        }
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        let shown = std::ffi::CStr::from_ptr(name.as_ptr())
            .to_string_lossy()
            .into_owned();
        if slave < 0 {
            return blocked(Error::last_os_error(), format!("open {shown}"));
        }
        let line = b"ping\n";
        if libc::write(slave, line.as_ptr().cast(), line.len()) != line.len() as isize {
            return blocked(Error::last_os_error(), "write to the pty");
        }
        let mut buf = [0u8; 64];
        let n = libc::read(master, buf.as_mut_ptr().cast(), buf.len());
        if n <= 0 || !buf[..n as usize].starts_with(b"ping") {
            return blocked(Error::last_os_error(), "read from the pty master");
        }
        Outcome::Succeeded(format!("pty pair {shown}"))
    }
}

/// Opens a pty and sends its master over the unix socket at `path` (`SCM_RIGHTS`), so that
/// it outlives the run.
fn pty_pass(path: &str) -> Outcome {
    let (addr, len) = match unix_address(path, false) {
        Ok(a) => a,
        Err(outcome) => return outcome,
    };
    // SAFETY: the pty calls get valid flags and buffers; descriptors are closed at exit.
    let master = unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY) };
    if master < 0 {
        return blocked(Error::last_os_error(), "posix_openpt (/dev/ptmx)");
    }
    // SAFETY: as above, on our own master.
    if unsafe { libc::grantpt(master) != 0 || libc::unlockpt(master) != 0 } {
        return blocked(Error::last_os_error(), "grantpt/unlockpt");
    }
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: a buffer of its size; then a C string the call wrote.
    let shown = unsafe {
        if libc::ptsname_r(master, name.as_mut_ptr(), name.len()) != 0 {
            return blocked(Error::last_os_error(), "ptsname");
        }
        std::ffi::CStr::from_ptr(name.as_ptr())
            .to_string_lossy()
            .into_owned()
    };
    let sent = socket(libc::AF_UNIX, libc::SOCK_STREAM).and_then(|fd| {
        // SAFETY: addr is a valid sockaddr_un of at least `len` bytes.
        let ret = unsafe { libc::connect(fd.0, (&addr as *const libc::sockaddr_un).cast(), len) };
        check(ret as libc::c_long)?;
        // SAFETY: both descriptors are open for the length of the call.
        let (sock, master) =
            unsafe { (BorrowedFd::borrow_raw(fd.0), BorrowedFd::borrow_raw(master)) };
        fdpass::send_one(sock, master)
    });
    match sent {
        Ok(()) => Outcome::Succeeded(format!("sent the master of {shown} to {path}")),
        Err(e) => blocked(e, format!("connect to {path} and send a pty master")),
    }
}

/// The run's devpts instance: its mount (the unique id, never reused), what it lists, and the
/// modes of its root and of `ptmx`.
fn pts_status() -> Outcome {
    let mut entries: Vec<String> = match std::fs::read_dir("/dev/pts") {
        Ok(dir) => dir
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) => return blocked(e, "list /dev/pts"),
    };
    entries.sort();
    let mode = |path: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(path)
            .map(|m| format!("{:o}", m.permissions().mode() & 0o7777))
            .unwrap_or_else(|e| format!("unknown({e})"))
    };
    let mount = unique_mount_id("/dev/pts");
    Outcome::Status(format!(
        "STATUS PtsMount={mount} Entries={} Root={} Ptmx={}",
        entries.join(","),
        mode("/dev/pts"),
        mode("/dev/pts/ptmx")
    ))
}

/// The unique id (`STATX_MNT_ID_UNIQUE`, Linux 6.8; never reused) of the mount `path` shows,
/// or `unknown`.
fn unique_mount_id(path: &str) -> String {
    let Ok(c) = std::ffi::CString::new(path) else {
        return "unknown".into();
    };
    // SAFETY: statx fills a zeroed struct; a C string.
    unsafe {
        let mut stx: libc::statx = std::mem::zeroed();
        let rc = libc::statx(libc::AT_FDCWD, c.as_ptr(), 0, 0x4000, &mut stx);
        if rc == 0 && stx.stx_mask & 0x4000 != 0 {
            stx.stx_mnt_id.to_string()
        } else {
            "unknown".to_string()
        }
    }
}

fn mount_ids(paths: &[String]) -> Outcome {
    let shown: Vec<String> = paths
        .iter()
        .map(|p| format!("{p}={}", unique_mount_id(p)))
        .collect();
    Outcome::Status(format!("STATUS {}", shown.join(" ")))
}

fn tmpfile(dir: &str) -> Outcome {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let made = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .open(dir);
    match made.and_then(|f| f.metadata()) {
        Ok(meta) => Outcome::Succeeded(format!("an unnamed file in {dir}, inode {}", meta.ino())),
        Err(e) => blocked(e, format!("open({dir}, O_TMPFILE)")),
    }
}

/// `KEY_SPEC_USER_KEYRING` (Linux's uapi `keyctl.h`): the caller's user keyring, one per uid in
/// each user namespace.
const USER_KEYRING: libc::c_long = -4;

fn add_key(name: &str) -> Outcome {
    let Ok(desc) = std::ffi::CString::new(name) else {
        return Outcome::Error(format!("a NUL in {name:?}"));
    };
    let payload = b"left by an earlier run";
    // SAFETY: add_key with C strings and a live payload buffer of the given length.
    let serial = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            c"user".as_ptr(),
            desc.as_ptr(),
            payload.as_ptr(),
            payload.len(),
            USER_KEYRING,
        )
    };
    if serial < 0 {
        return blocked(Error::last_os_error(), format!("add_key(user, {name})"));
    }
    Outcome::Succeeded(format!("key {serial} added to the user keyring"))
}

fn find_key(name: &str) -> Outcome {
    const KEYCTL_SEARCH: libc::c_long = 10;
    let Ok(desc) = std::ffi::CString::new(name) else {
        return Outcome::Error(format!("a NUL in {name:?}"));
    };
    // SAFETY: keyctl(KEYCTL_SEARCH) with C strings and no destination keyring.
    let serial = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_SEARCH,
            USER_KEYRING,
            c"user".as_ptr(),
            desc.as_ptr(),
            0 as libc::c_long,
        )
    };
    if serial < 0 {
        return blocked(
            Error::last_os_error(),
            format!("keyctl(SEARCH, user, {name})"),
        );
    }
    Outcome::Succeeded(format!("key {serial} found in the user keyring"))
}

fn request_key(name: &str) -> Outcome {
    let Ok(desc) = std::ffi::CString::new(name) else {
        return Outcome::Error(format!("a NUL in {name:?}"));
    };
    // SAFETY: request_key with C strings, no callout information and no destination keyring.
    let serial = unsafe {
        libc::syscall(
            libc::SYS_request_key,
            c"user".as_ptr(),
            desc.as_ptr(),
            std::ptr::null::<libc::c_char>(),
            0 as libc::c_long,
        )
    };
    if serial < 0 {
        return blocked(Error::last_os_error(), format!("request_key(user, {name})"));
    }
    Outcome::Succeeded(format!("key {serial} found by request_key"))
}

fn make_remove(path: &str) -> Outcome {
    match std::fs::write(path, b"x").and_then(|()| std::fs::remove_file(path)) {
        Ok(()) => Outcome::Succeeded(format!("made and removed {path}")),
        Err(e) => blocked(e, format!("make and remove {path}")),
    }
}

fn list_later(dir: &str) -> Outcome {
    std::thread::sleep(std::time::Duration::from_millis(50));
    match std::fs::read_dir(dir).map(|entries| entries.count()) {
        Ok(n) => Outcome::Succeeded(format!("listed {n} entries of {dir}")),
        Err(e) => blocked(e, format!("list {dir}")),
    }
}

fn status() -> Outcome {
    let text = match std::fs::read_to_string("/proc/self/status") {
        Ok(t) => t,
        Err(e) => return Outcome::Error(format!("cannot read /proc/self/status: {e}")),
    };
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
            .unwrap_or("missing")
            .to_string()
    };
    Outcome::Status(format!(
        "STATUS NoNewPrivs={} CapEff={} CapPrm={} CapBnd={} Uid={} Euid={} NetNs={} NetCookie={}",
        field("NoNewPrivs"),
        field("CapEff"),
        field("CapPrm"),
        field("CapBnd"),
        field("Uid").split_whitespace().next().unwrap_or("missing"),
        field("Uid").split_whitespace().nth(1).unwrap_or("missing"),
        net_namespace(),
        net_cookie(),
    ))
}

fn errno_name(errno: i32) -> &'static str {
    match errno {
        0 => "-",
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::E2BIG => "E2BIG",
        libc::ENOEXEC => "ENOEXEC",
        libc::EBADF => "EBADF",
        libc::ECHILD => "ECHILD",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::ENOSYS => "ENOSYS",
        libc::ELOOP => "ELOOP",
        libc::EUSERS => "EUSERS",
        libc::ENOTSOCK => "ENOTSOCK",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ECONNRESET => "ECONNRESET",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        _ => "E?",
    }
}
