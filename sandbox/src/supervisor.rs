//! The notification supervisor: answers the seccomp user notifications of a confined command
//! (see [`crate::seccomp`] for which system calls are sent here).
//!
//! # `execve` (exec = deny)
//!
//! The command's own `execve` (the first, from the sandbox's child) goes through. After it,
//! only the interpreter chain the plan resolved may continue: when the command is a script
//! whose `#!` line names a relay such as `/usr/bin/env`, that relay searches `PATH` for the
//! interpreter with one `execve` per directory. Such an `execve` is let through only while the
//! calling process is the command's process, still running a relay of the chain (its
//! `/proc/PID/exe`), and within the number of attempts the plan counted. A relay is a plain
//! single-threaded program whose arguments come from the script's first line, so the path it
//! passes cannot be swapped between the check and the kernel's own read. Everything else is
//! refused with `EPERM`. Landlock's Execute right is held by the chain's files alone, so even
//! an admitted `execve` can only start them.
//!
//! # `connect` (strict profile, net = deny or a host list)
//!
//! A host service's pathname socket inside a root is a file like any other, and neither the
//! network namespace nor Landlock below ABI 9 keeps a `connect()` from reaching it. So every
//! `connect` comes here, and the supervisor connects on the tool's behalf:
//!
//! 1. it copies the address from the tool's memory (the kernel will never read the tool's copy,
//!    so another thread rewriting it after the check changes nothing: the flag that would let
//!    the tool's own call continue, `SECCOMP_USER_NOTIF_FLAG_CONTINUE`, is never used here);
//! 2. it takes the tool's socket with `pidfd_getfd`;
//! 3. for a pathname unix address, it resolves the path as the tool sees it: from
//!    `/proc/PID/root` for an absolute path (`openat2` with `RESOLVE_IN_ROOT`, so symlinks stay
//!    inside the tool's view), from `/proc/PID/cwd` for a relative one (no symlinks at all),
//!    without following magic links, to an `O_PATH` descriptor of the socket file;
//! 4. it admits only a socket on a filesystem the sandbox made itself (its private `/tmp`): one
//!    whose device is mounted nowhere in the runner's own mount namespace. Every root is a bind
//!    of a host filesystem, so a host service's socket in any root is refused with `EACCES`;
//! 5. it connects the tool's socket to `/proc/self/fd/N` of that descriptor, which names the
//!    resolved file and nothing else, and answers with the result.
//!
//! One visible difference: the listening side's `SO_PEERCRED` shows the supervisor (the
//! runner's uid, which maps to the overflow uid inside, and pid 0), not the connecting tool. A
//! relative socket path may not pass through symlinks (`ELOOP`); absolute ones may.
//!
//! Other families connect with the copied address: the socket lives in the sandbox's network
//! namespace, which is what confines it; a TCP socket may only reach the ports Landlock would
//! allow (the egress listeners of a host list; none for net = deny), since the supervisor's own
//! `connect` is not under the tool's Landlock domain. Each `connect` is served on its own
//! thread, so one that blocks (a listener with a full backlog) holds up nothing else.
//!
//! Unix datagram sockets (`SOCK_DGRAM`, and `SOCK_RAW`, which the kernel makes one) are refused by
//! the filter itself: `sendmsg` names its destination in
//! memory the filter cannot read, and supervising every `sendmsg` would mean sending on the
//! tool's behalf, descriptors included. Stream and seqpacket sockets reach a peer only through
//! `connect`.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// What the supervisor admits for one run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Supervision {
    /// `execve` calls still admitted: the command's own (until it executed), then the relay
    /// attempts of its interpreter chain.
    pub execs_left: u32,
    /// Whether the command's own `execve` was let through.
    pub first_exec_done: bool,
    /// Programs of the interpreter chain that may execute the next one (e.g. `/usr/bin/env`),
    /// as (device, inode): the same file whatever path it is bound at.
    pub relays: Arc<[(u64, u64)]>,
    /// TCP ports a supervised `connect` may reach; `None`: any (net = allow never gets here).
    pub tcp_ports: Option<Arc<[u16]>>,
}

impl Supervision {
    /// The supervision a request asks for.
    pub(crate) fn for_request(req: &crate::request::Request) -> Supervision {
        // A sealed execve ([`crate::request::Request::exec_secret`]) is the command's own,
        // already admitted by its filter.
        let budget = req.exec_budget.max(1) - u32::from(req.exec_secret);
        Supervision {
            execs_left: if req.exec_notify { budget } else { 0 },
            first_exec_done: req.exec_secret,
            relays: req.exec_relays.clone().into(),
            tcp_ports: req
                .landlock
                .restrict_connect
                .then(|| req.landlock.connect_ports.clone().into()),
        }
    }
}

/// Where [`answer`] runs, which decides what it may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answering {
    /// The strict profile's hand-off: only the command's own `execve` can arrive; no
    /// allocation, no thread.
    HandOff,
    /// A single-threaded process that forks (the hardened zygote): it may allocate, but must
    /// not start a thread (a forked child could inherit a lock held by it); a `connect`, which
    /// only the strict profile's filter sends, is refused.
    NoThreads,
    /// The caller's collecting loop: a `connect` is served on a thread of its own.
    Threads,
}

/// Receives and answers one notification on `listener` from the sandbox whose command is
/// `child`; `mode` says what the caller's process allows.
pub(crate) fn answer(
    listener: RawFd,
    child: libc::pid_t,
    state: &mut Supervision,
    mode: Answering,
) {
    // SAFETY: the notification struct is plain data, zeroed as the kernel requires.
    let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: RECV fills `notif`.
    if unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif) } != 0 {
        return;
    }
    let nr = notif.data.nr as libc::c_long;
    if nr == libc::SYS_execve || nr == libc::SYS_execveat {
        let admitted = admit_exec(&notif, child, state, mode != Answering::HandOff);
        respond(
            listener,
            notif.id,
            if admitted {
                None
            } else {
                Some(Err(libc::EPERM))
            },
        );
    } else if nr == libc::SYS_connect && mode == Answering::Threads {
        serve_connect(listener, notif, state.tcp_ports.clone());
    } else {
        respond(listener, notif.id, Some(Err(libc::EPERM)));
    }
}

/// Whether an `execve` may continue (see the module documentation).
fn admit_exec(
    notif: &libc::seccomp_notif,
    child: libc::pid_t,
    state: &mut Supervision,
    may_allocate: bool,
) -> bool {
    if notif.pid as libc::pid_t != child || state.execs_left == 0 {
        return false;
    }
    if !state.first_exec_done {
        state.first_exec_done = true;
        state.execs_left -= 1;
        return true;
    }
    if !may_allocate || state.relays.is_empty() {
        return false;
    }
    use std::os::unix::fs::MetadataExt;
    let running = std::fs::metadata(format!("/proc/{child}/exe"));
    if running.is_ok_and(|exe| state.relays.contains(&(exe.dev(), exe.ino()))) {
        state.execs_left -= 1;
        return true;
    }
    // The chain is done (or was left): nothing more runs.
    state.execs_left = 0;
    false
}

/// Sends the answer: `None` continues the call, `Some(Ok(v))` returns `v`, `Some(Err(e))`
/// fails it with `e`.
fn respond(listener: RawFd, id: u64, result: Option<Result<i64, i32>>) {
    // SAFETY: the response struct is plain data.
    let mut resp: libc::seccomp_notif_resp = unsafe { std::mem::zeroed() };
    resp.id = id;
    match result {
        None => resp.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        Some(Ok(v)) => resp.val = v,
        Some(Err(e)) => resp.error = -e,
    }
    // SAFETY: SEND reads `resp`; a notification whose caller is gone fails with ENOENT.
    unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) };
}

/// Connects on a thread of its own (inline when no thread can be started).
fn serve_connect(listener: RawFd, notif: libc::seccomp_notif, ports: Option<Arc<[u16]>>) {
    // SAFETY: duplicating our listener for the thread, which owns the copy.
    let own = unsafe { libc::fcntl(listener, libc::F_DUPFD_CLOEXEC, 0) };
    if own < 0 {
        let result = connect_on_behalf(listener, &notif, ports.as_deref());
        respond(listener, notif.id, Some(result));
        return;
    }
    // SAFETY: a new descriptor owned by the thread.
    let own = unsafe { OwnedFd::from_raw_fd(own) };
    let thread_ports = ports.clone();
    let spawned = std::thread::Builder::new()
        .name("sandbox-connect".into())
        .spawn(move || {
            let result = connect_on_behalf(own.as_raw_fd(), &notif, thread_ports.as_deref());
            respond(own.as_raw_fd(), notif.id, Some(result));
        });
    if spawned.is_err() {
        let result = connect_on_behalf(listener, &notif, ports.as_deref());
        respond(listener, notif.id, Some(result));
    }
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The whole `connect` on the tool's behalf: its return value or errno.
fn connect_on_behalf(
    listener: RawFd,
    notif: &libc::seccomp_notif,
    tcp_ports: Option<&[u16]>,
) -> Result<i64, i32> {
    let pid = notif.pid as libc::pid_t;
    let fd = notif.data.args[0] as u32 as i32;
    let len = notif.data.args[2] as u32 as usize;
    let mut addr = [0u8; std::mem::size_of::<libc::sockaddr_storage>()];
    if len > addr.len() {
        return Err(libc::EINVAL);
    }
    read_memory(pid, notif.data.args[1], &mut addr[..len])?;
    // The pid is the caller's only while its notification is pending.
    // SAFETY: ID_VALID reads the id.
    if unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &notif.id) } != 0 {
        return Err(libc::EINTR);
    }
    let socket = take_fd(pid, fd)?;
    let family = if len >= 2 {
        u16::from_ne_bytes([addr[0], addr[1]]) as i32
    } else {
        -1
    };
    if family == libc::AF_UNIX && len > 2 && addr[2] != 0 {
        let end = addr[2..len]
            .iter()
            .position(|&b| b == 0)
            .map_or(len, |i| i + 2);
        let target = resolve_in_view(pid, &addr[2..end])?;
        return connect_to_resolved(&socket, &target);
    }
    if family == libc::AF_INET || family == libc::AF_INET6 {
        if let Some(ports) = tcp_ports {
            if is_tcp(&socket) && len >= 4 {
                let port = u16::from_be_bytes([addr[2], addr[3]]);
                if !ports.contains(&port) {
                    return Err(libc::EACCES);
                }
            }
        }
    }
    // SAFETY: connecting our copy of the socket to our copy of the address.
    let rc = unsafe {
        libc::connect(
            socket.as_raw_fd(),
            addr.as_ptr().cast(),
            len as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(0)
    } else {
        Err(last_errno())
    }
}

/// Copies `buf.len()` bytes at `remote` of process `pid`.
fn read_memory(pid: libc::pid_t, remote: u64, buf: &mut [u8]) -> Result<(), i32> {
    if buf.is_empty() {
        return Ok(());
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let far = libc::iovec {
        iov_base: remote as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: one local iovec over `buf`, one remote one; the kernel checks the remote side.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &far, 1, 0) };
    if n == buf.len() as isize {
        Ok(())
    } else {
        Err(libc::EFAULT)
    }
}

/// The tool's descriptor `fd` (of thread `pid`), duplicated into this process.
fn take_fd(pid: libc::pid_t, fd: i32) -> Result<OwnedFd, i32> {
    // SAFETY: pidfd_open with integers; PIDFD_THREAD (O_EXCL) names a thread, which `pid` may
    // be; older kernels only take a process.
    let mut pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, libc::O_EXCL) };
    if pidfd < 0 {
        // SAFETY: as above.
        pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    }
    if pidfd < 0 {
        return Err(libc::ESRCH);
    }
    // SAFETY: a new descriptor owned here.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    // SAFETY: pidfd_getfd with integers.
    let got = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if got < 0 {
        return Err(match last_errno() {
            libc::EBADF => libc::EBADF,
            _ => libc::EPERM,
        });
    }
    // SAFETY: a new descriptor owned here.
    let socket = unsafe { OwnedFd::from_raw_fd(got as RawFd) };
    // SAFETY: fstat into a zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(socket.as_raw_fd(), &mut st) } != 0
        || st.st_mode & libc::S_IFMT != libc::S_IFSOCK
    {
        return Err(libc::ENOTSOCK);
    }
    Ok(socket)
}

fn is_tcp(socket: &OwnedFd) -> bool {
    let get = |opt: libc::c_int| {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt into a c_int.
        let rc = unsafe {
            libc::getsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (rc == 0).then_some(v)
    };
    // A stream socket of an IP family is TCP or MPTCP, both under Landlock's TCP rules.
    get(libc::SO_TYPE) != Some(libc::SOCK_DGRAM)
}

/// Opens `path` (bytes of a `sun_path`) as thread `pid` of the sandbox sees it, as `O_PATH`.
fn resolve_in_view(pid: libc::pid_t, path: &[u8]) -> Result<OwnedFd, i32> {
    let absolute = path.first() == Some(&b'/');
    let (base, resolve) = if absolute {
        ("root", libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS)
    } else {
        (
            "cwd",
            libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
        )
    };
    let base = CString::new(format!("/proc/{pid}/{base}")).map_err(|_| libc::EINVAL)?;
    // SAFETY: open of a C string; the result is owned below.
    let dir = unsafe {
        libc::open(
            base.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return Err(libc::EACCES);
    }
    // SAFETY: a new descriptor owned here.
    let dir = unsafe { OwnedFd::from_raw_fd(dir) };
    let name = CString::new(path).map_err(|_| libc::EINVAL)?;
    // SAFETY: open_how is plain data.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = resolve;
    // SAFETY: openat2 with a live C string and open_how of the given size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: a new descriptor owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Connects `socket` to the resolved socket file, if the sandbox made its filesystem.
fn connect_to_resolved(socket: &OwnedFd, target: &OwnedFd) -> Result<i64, i32> {
    // SAFETY: fstat into a zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(target.as_raw_fd(), &mut st) } != 0 {
        return Err(last_errno());
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        // What the kernel answers for a path that is not a socket.
        return Err(libc::ECONNREFUSED);
    }
    if !made_by_the_sandbox(st.st_dev) {
        return Err(libc::EACCES);
    }
    let name = format!("/proc/self/fd/{}", target.as_raw_fd());
    // SAFETY: sockaddr_un is plain data; the name (under 30 bytes) fits sun_path with its NUL.
    let mut sun: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (dst, &src) in sun.sun_path.iter_mut().zip(name.as_bytes()) {
        *dst = src as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + name.len() + 1;
    // SAFETY: connecting our copy of the socket to a sockaddr_un of `len` bytes.
    let rc = unsafe {
        libc::connect(
            socket.as_raw_fd(),
            (&sun as *const libc::sockaddr_un).cast(),
            len as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(0)
    } else {
        Err(last_errno())
    }
}

/// Whether a filesystem (by device) is one the sandbox mounted for itself: one mounted nowhere
/// in the runner's own mount namespace. Every root is a bind of a filesystem of that namespace;
/// the private `/tmp` is a tmpfs that exists only in the sandbox's. Unreadable means no.
fn made_by_the_sandbox(dev: libc::dev_t) -> bool {
    let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let wanted = format!("{}:{}", libc::major(dev), libc::minor(dev));
    !mountinfo
        .lines()
        .any(|line| line.split_whitespace().nth(2) == Some(wanted.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_filesystems_are_not_the_sandboxs() {
        let st = std::fs::metadata("/proc/self/mountinfo").unwrap();
        use std::os::unix::fs::MetadataExt;
        assert!(!made_by_the_sandbox(st.dev()));
        let root = std::fs::metadata("/").unwrap();
        assert!(!made_by_the_sandbox(root.dev()));
        // A device number no filesystem of this namespace has.
        assert!(made_by_the_sandbox(libc::makedev(0, 0xfffff)));
    }
}
