//! The parent side: `posix_spawn` the trampoline with its channels on fds 3-5, send the
//! request, collect output and status.
//!
//! glibc's `posix_spawn` uses `clone(CLONE_VM | CLONE_VFORK)`, so no page table is copied and
//! the cost does not depend on how much memory the caller holds.

use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::request::{Status, EGRESS_FD, REQUEST_FD, STATUS_FD};
use crate::trampoline::SUBCOMMAND;

/// What to do with the command's standard streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stdio {
    /// stdin from /dev/null, stdout and stderr captured (with the output cap).
    #[default]
    Capture,
    /// All three inherited from the caller.
    Inherit,
}

pub(crate) struct Collected {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub statuses: Vec<Status>,
    pub trampoline_status: i32,
    pub backstop_killed: bool,
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: pipe2 fills two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Moves an fd above the numbers the file actions target, so no dup2 has source == target.
fn high(fd: OwnedFd) -> std::io::Result<OwnedFd> {
    if fd.as_raw_fd() > 10 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC returns a new owned fd.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 11) };
    if new < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: new fd owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

struct FileActions(libc::posix_spawn_file_actions_t);

impl FileActions {
    fn new() -> FileActions {
        // SAFETY: init fills the zeroed struct.
        unsafe {
            let mut fa = std::mem::zeroed();
            libc::posix_spawn_file_actions_init(&mut fa);
            FileActions(fa)
        }
    }
    fn dup2(&mut self, from: RawFd, to: RawFd) -> std::io::Result<()> {
        // SAFETY: valid file actions object.
        let rc = unsafe { libc::posix_spawn_file_actions_adddup2(&mut self.0, from, to) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        Ok(())
    }
}

impl Drop for FileActions {
    fn drop(&mut self) {
        // SAFETY: destroying what init created.
        unsafe { libc::posix_spawn_file_actions_destroy(&mut self.0) };
    }
}

pub(crate) struct Running {
    pub pid: libc::pid_t,
    request_w: Option<OwnedFd>,
    status_r: OwnedFd,
    stdout_r: Option<OwnedFd>,
    stderr_r: Option<OwnedFd>,
}

/// Spawns `helper SUBCOMMAND` with the channels in place.
pub(crate) fn spawn(
    helper: &Path,
    stdio: Stdio,
    egress: Option<OwnedFd>,
) -> std::io::Result<Running> {
    let (req_r, req_w) = pipe()?;
    let (status_r, status_w) = pipe()?;
    let req_r = high(req_r)?;
    let status_w = high(status_w)?;
    let egress = egress.map(high).transpose()?;
    let mut fa = FileActions::new();
    fa.dup2(req_r.as_raw_fd(), REQUEST_FD)?;
    fa.dup2(status_w.as_raw_fd(), STATUS_FD)?;
    if let Some(e) = &egress {
        fa.dup2(e.as_raw_fd(), EGRESS_FD)?;
    }
    let mut keep = Vec::new();
    let (stdout_r, stderr_r) = match stdio {
        Stdio::Inherit => (None, None),
        Stdio::Capture => {
            let null = high(OwnedFd::from(std::fs::File::open("/dev/null")?))?;
            let (out_r, out_w) = pipe()?;
            let (err_r, err_w) = pipe()?;
            let out_w = high(out_w)?;
            let err_w = high(err_w)?;
            fa.dup2(null.as_raw_fd(), 0)?;
            fa.dup2(out_w.as_raw_fd(), 1)?;
            fa.dup2(err_w.as_raw_fd(), 2)?;
            keep.extend([null, out_w, err_w]);
            (Some(out_r), Some(err_r))
        }
    };
    let path = CString::new(helper.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::other("helper path contains NUL"))?;
    let arg1 = CString::new(SUBCOMMAND).expect("no NUL");
    let argv = [path.as_ptr(), arg1.as_ptr(), std::ptr::null()];
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    let mut pid: libc::pid_t = 0;
    // SAFETY: attributes reset the signal mask and dispositions; all pointers are valid.
    let rc = unsafe {
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawnattr_init(&mut attr);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::posix_spawnattr_setsigmask(&mut attr, &empty);
        libc::posix_spawnattr_setsigdefault(&mut attr, &all);
        libc::posix_spawnattr_setflags(
            &mut attr,
            (libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF) as libc::c_short,
        );
        let rc = libc::posix_spawn(
            &mut pid,
            path.as_ptr(),
            &fa.0,
            &attr,
            argv.as_ptr() as *const *mut libc::c_char,
            envp.as_ptr() as *const *mut libc::c_char,
        );
        libc::posix_spawnattr_destroy(&mut attr);
        rc
    };
    drop((req_r, status_w, egress, keep));
    if rc != 0 {
        return Err(std::io::Error::new(
            std::io::Error::from_raw_os_error(rc).kind(),
            format!(
                "cannot start the sandbox helper {}: {}",
                helper.display(),
                std::io::Error::from_raw_os_error(rc)
            ),
        ));
    }
    Ok(Running {
        pid,
        request_w: Some(req_w),
        status_r,
        stdout_r,
        stderr_r,
    })
}

impl Running {
    /// Sends the request; the trampoline reads it to EOF.
    pub fn send(&mut self, request: &[u8]) -> std::io::Result<()> {
        let fd = self.request_w.take().expect("request sent once");
        let mut f = std::fs::File::from(fd);
        f.write_all(request)
    }

    /// Kills the trampoline (its children follow through PDEATHSIG).
    pub fn kill(&self) {
        // SAFETY: signalling our child.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
    }

    /// Waits for the end, reading output with `cap`; kills the trampoline at `backstop`.
    ///
    /// One poll loop in the calling thread serves stdout, stderr, the status channel and the
    /// trampoline's pidfd: no thread is started per run.
    pub fn collect(mut self, cap: Option<u64>, backstop: Option<Duration>) -> Collected {
        drop(self.request_w.take());
        let mut sinks: Vec<Sink> = Vec::with_capacity(3);
        for (fd, cap) in [
            (self.stdout_r.take(), cap),
            (self.stderr_r.take(), cap),
            (Some(self.status_r), None),
        ] {
            if let Some(fd) = fd {
                // SAFETY: setting O_NONBLOCK on our own pipe end.
                unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
                sinks.push(Sink {
                    fd: Some(fd),
                    buf: Vec::new(),
                    truncated: false,
                    cap,
                });
            }
        }
        let has_out = sinks.len() == 3;
        // SAFETY: pidfd_open on our child.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid, 0) } as RawFd;
        let deadline = backstop.map(|b| Instant::now() + b);
        let mut status = None;
        let mut killed = false;
        let mut gone_at: Option<Instant> = None;
        loop {
            let open = sinks.iter().any(|s| s.fd.is_some());
            if !open && (status.is_some() || pidfd < 0) {
                break;
            }
            // After a backstop kill, descendants that escaped may keep the pipes open.
            if killed && gone_at.is_some_and(|t| t.elapsed() > Duration::from_millis(500)) {
                break;
            }
            let mut fds: Vec<libc::pollfd> = sinks
                .iter()
                .filter_map(|s| s.fd.as_ref())
                .map(|fd| libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            if pidfd >= 0 && status.is_none() {
                fds.push(libc::pollfd {
                    fd: pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                });
            }
            let mut wait_ms: i32 = -1;
            if let (Some(d), false) = (deadline, killed) {
                wait_ms = d
                    .saturating_duration_since(Instant::now())
                    .as_millis()
                    .min(i32::MAX as u128) as i32;
            }
            if killed {
                wait_ms = 100;
            }
            // SAFETY: fds is a valid pollfd array.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait_ms) };
            if n < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
            for p in fds.iter().filter(|p| p.revents != 0) {
                if p.fd == pidfd {
                    let mut s = 0;
                    // SAFETY: reaping our child, which the pidfd says has exited.
                    if unsafe { libc::waitpid(self.pid, &mut s, libc::WNOHANG) } == self.pid {
                        status = Some(s);
                        gone_at = Some(Instant::now());
                    }
                } else if let Some(sink) = sinks
                    .iter_mut()
                    .find(|s| s.fd.as_ref().is_some_and(|f| f.as_raw_fd() == p.fd))
                {
                    sink.drain();
                }
            }
            if let (Some(d), false) = (deadline, killed) {
                if status.is_none() && Instant::now() >= d {
                    // SAFETY: signalling our child; its children follow by PDEATHSIG.
                    unsafe { libc::kill(self.pid, libc::SIGKILL) };
                    killed = true;
                }
            }
        }
        if pidfd >= 0 {
            // SAFETY: closing our pidfd.
            unsafe { libc::close(pidfd) };
        }
        let trampoline_status = match status {
            Some(s) => s,
            None => wait_blocking(self.pid),
        };
        let status_sink = sinks.pop().expect("status channel");
        let statuses = String::from_utf8_lossy(&status_sink.buf)
            .lines()
            .filter_map(|l| serde_json::from_str::<Status>(l).ok())
            .collect();
        let (mut stdout, mut stderr) = (Sink::empty(), Sink::empty());
        if has_out {
            stderr = sinks.pop().expect("stderr");
            stdout = sinks.pop().expect("stdout");
        }
        Collected {
            stdout: stdout.buf,
            stderr: stderr.buf,
            stdout_truncated: stdout.truncated,
            stderr_truncated: stderr.truncated,
            statuses,
            trampoline_status,
            backstop_killed: killed,
        }
    }
}

fn wait_blocking(pid: libc::pid_t) -> i32 {
    let mut s = 0;
    loop {
        // SAFETY: waiting for our child.
        let r = unsafe { libc::waitpid(pid, &mut s, 0) };
        if r == pid
            || (r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR))
        {
            return s;
        }
    }
}

struct Sink {
    fd: Option<OwnedFd>,
    buf: Vec<u8>,
    truncated: bool,
    cap: Option<u64>,
}

impl Sink {
    fn empty() -> Sink {
        Sink {
            fd: None,
            buf: Vec::new(),
            truncated: false,
            cap: None,
        }
    }

    /// Reads what is there; closes at EOF. Bytes beyond the cap are read and dropped, so the
    /// writer never blocks on a full pipe.
    fn drain(&mut self) {
        let Some(fd) = &self.fd else { return };
        let mut chunk = [0u8; 16 * 1024];
        loop {
            // SAFETY: reading into a local buffer.
            let n = unsafe { libc::read(fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
            if n == 0 {
                self.fd = None;
                return;
            }
            if n < 0 {
                let e = std::io::Error::last_os_error().raw_os_error();
                if e == Some(libc::EINTR) {
                    continue;
                }
                if e != Some(libc::EAGAIN) {
                    self.fd = None;
                }
                return;
            }
            let n = n as usize;
            let room = self
                .cap
                .map_or(usize::MAX, |c| (c as usize).saturating_sub(self.buf.len()));
            if n > room {
                self.truncated = true;
            }
            self.buf.extend_from_slice(&chunk[..n.min(room)]);
        }
    }
}

/// A unix socketpair for the egress channel: (parent end, child end).
pub(crate) fn socketpair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: socketpair fills two fds.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
