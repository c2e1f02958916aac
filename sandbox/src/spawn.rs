//! The parent side: `posix_spawn` the trampoline with its channels on fds 3-5, send the
//! request, collect output and status.
//!
//! glibc's `posix_spawn` uses `clone(CLONE_VM | CLONE_VFORK)`, so no page table is copied and
//! the cost does not depend on how much memory the caller holds.

use std::ffi::CString;
use std::io::{Read, Write};
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

fn read_capped(fd: OwnedFd, cap: Option<u64>) -> (Vec<u8>, bool) {
    let mut file = std::fs::File::from(fd);
    let mut out = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 16 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let room = cap.map_or(usize::MAX, |c| (c as usize).saturating_sub(out.len()));
                if n > room {
                    truncated = true;
                }
                out.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    (out, truncated)
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
    pub fn collect(mut self, cap: Option<u64>, backstop: Option<Duration>) -> Collected {
        drop(self.request_w.take());
        let out = self
            .stdout_r
            .take()
            .map(|fd| std::thread::spawn(move || read_capped(fd, cap)));
        let err = self
            .stderr_r
            .take()
            .map(|fd| std::thread::spawn(move || read_capped(fd, cap)));
        let status_fd = std::fs::File::from(self.status_r);
        let status_thread = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = { status_fd }.read_to_string(&mut text);
            text.lines()
                .filter_map(|l| serde_json::from_str::<Status>(l).ok())
                .collect::<Vec<_>>()
        });
        let (trampoline_status, backstop_killed) = wait_with_backstop(self.pid, backstop);
        let (stdout, stdout_truncated) = out
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default();
        let (stderr, stderr_truncated) = err
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default();
        let statuses = status_thread.join().unwrap_or_default();
        Collected {
            stdout,
            stderr,
            stdout_truncated,
            stderr_truncated,
            statuses,
            trampoline_status,
            backstop_killed,
        }
    }
}

fn wait_with_backstop(pid: libc::pid_t, backstop: Option<Duration>) -> (i32, bool) {
    let mut killed = false;
    if let Some(limit) = backstop {
        // SAFETY: pidfd_open on our child.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
        if pidfd >= 0 {
            let deadline = Instant::now() + limit;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                let mut p = libc::pollfd {
                    fd: pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                let n =
                    unsafe { libc::poll(&mut p, 1, left.as_millis().min(i32::MAX as u128) as i32) };
                if n > 0 {
                    break;
                }
                if n == 0 || Instant::now() >= deadline {
                    // SAFETY: signalling our child.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    killed = true;
                    break;
                }
            }
            // SAFETY: closing our pidfd.
            unsafe { libc::close(pidfd) };
        }
    }
    let mut status = 0;
    loop {
        // SAFETY: waiting for our child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    (status, killed)
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
