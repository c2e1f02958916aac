//! The parent side of a run: start the child (the strict profile's namespace child through
//! [`crate::nsclone`], or the hardened profile's command process through the zygote,
//! [`crate::zygote`]), then one loop that collects output and status and enforces the
//! timeout.
//!
//! Neither start copies the caller's page tables: the strict child shares them (`CLONE_VM`),
//! and the hardened command's process shares the small zygote's (`CLONE_VM` too), which
//! itself was started once with `posix_spawn` (`CLONE_VM | CLONE_VFORK` in glibc), so the cost
//! does not depend on how much memory the caller holds.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::nsclone::StdioFds;
use crate::request::{Request, Status};
use crate::zygote::Report;

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
    pub child_status: i32,
    pub backstop_killed: bool,
    /// Hardened: CPU time of T, the command and the zygote's handling of the run.
    pub helper_cpu: Option<Duration>,
    /// Hardened: the zygote ended before reporting G's end.
    pub helper_lost: bool,
    /// Strict: the child ended but its status could not be had (why).
    pub status_lost: Option<String>,
    /// Hardened: the zygote saw every process of the run gone before it reported (always true
    /// for the strict child, whose pid namespace ends with it).
    pub run_drained: bool,
}

/// A close-on-exec pipe: (read end, write end).
pub(crate) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: pipe2 fills two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Moves an fd above the numbers the file actions target, so no dup2 has source == target.
pub(crate) fn high(fd: OwnedFd) -> std::io::Result<OwnedFd> {
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

pub(crate) struct FileActions(libc::posix_spawn_file_actions_t);

impl FileActions {
    pub(crate) fn new() -> FileActions {
        // SAFETY: init fills the zeroed struct.
        unsafe {
            let mut fa = std::mem::zeroed();
            libc::posix_spawn_file_actions_init(&mut fa);
            FileActions(fa)
        }
    }
    pub(crate) fn dup2(&mut self, from: RawFd, to: RawFd) -> std::io::Result<()> {
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

/// The captured streams: the child's ends (stdin from /dev/null, stdout, stderr) and ours.
pub(crate) struct Streams {
    pub child: Option<[OwnedFd; 3]>,
    pub stdout_r: Option<OwnedFd>,
    pub stderr_r: Option<OwnedFd>,
}

impl Streams {
    pub(crate) fn new(stdio: Stdio) -> std::io::Result<Streams> {
        match stdio {
            Stdio::Inherit => Ok(Streams {
                child: None,
                stdout_r: None,
                stderr_r: None,
            }),
            Stdio::Capture => {
                let null = high(OwnedFd::from(std::fs::File::open("/dev/null")?))?;
                let (out_r, out_w) = pipe()?;
                let (err_r, err_w) = pipe()?;
                Ok(Streams {
                    child: Some([null, high(out_w)?, high(err_w)?]),
                    stdout_r: Some(out_r),
                    stderr_r: Some(err_r),
                })
            }
        }
    }

    fn child_fds(&self) -> Option<StdioFds> {
        self.child
            .as_ref()
            .map(|[i, o, e]| [i.as_raw_fd(), o.as_raw_fd(), e.as_raw_fd()])
    }
}

/// Who supervises the command, and what the collecting loop must do for it.
pub(crate) enum Supervisor {
    /// The hardened zygote: it reports on the run's socket ([`Waited::Zygote`]) and enforces
    /// the timeout itself; the caller only keeps a backstop.
    Zygote,
    /// The strict child is the command itself: the caller enforces the timeout, refuses later
    /// exec attempts, and turns the wait status into the final record.
    Direct {
        records: Vec<u8>,
        listener: Option<OwnedFd>,
        supervision: crate::supervisor::Supervision,
        timed_out: bool,
        deadline: Option<Instant>,
    },
}

/// The process the caller waits for.
pub(crate) enum Waited {
    /// The strict child, the caller's own: waited with `waitpid`.
    Child {
        pid: libc::pid_t,
        pidfd: Option<OwnedFd>,
    },
    /// The hardened command's process G, the zygote's child: its process group is killed
    /// through its pidfd; its wait status comes as the zygote's report on the run's socket,
    /// after the run's status records (gathered in `records`).
    Zygote {
        leader: OwnedFd,
        report: OwnedFd,
        records: Vec<u8>,
    },
}

pub(crate) struct Running {
    pub waited: Waited,
    pub supervisor: Supervisor,
    pub stdout_r: Option<OwnedFd>,
    pub stderr_r: Option<OwnedFd>,
}

/// Starts the strict profile's child in its namespaces and returns once it executed the
/// command (or reported why not). `timeout`: the policy's wall-clock limit. `view`: the run's
/// copy of the view template, when the policy has one.
pub(crate) fn spawn_direct(
    req: &Request,
    stdio: Stdio,
    egress: Option<OwnedFd>,
    timeout: Option<Duration>,
    view: Option<&crate::mounts::template::ViewCopy>,
    netns: Option<BorrowedFd<'_>>,
) -> Result<Running, String> {
    let streams = Streams::new(stdio).map_err(|e| format!("capturing output: {e}"))?;
    let deadline = timeout.map(|t| Instant::now() + t);
    let spawned = crate::nsclone::spawn(
        req,
        streams.child_fds(),
        egress.as_ref().map(|e| e.as_fd()),
        deadline,
        crate::supervisor::Supervision::for_request(req),
        view,
        netns,
    )?;
    Ok(Running {
        waited: Waited::Child {
            pid: spawned.pid,
            pidfd: Some(spawned.pidfd),
        },
        supervisor: Supervisor::Direct {
            records: spawned.records,
            listener: spawned.listener,
            supervision: spawned.supervision,
            timed_out: spawned.timed_out,
            deadline,
        },
        stdout_r: streams.stdout_r,
        stderr_r: streams.stderr_r,
    })
}

/// Starts `path argv1` with `posix_spawn`, its signal mask and dispositions reset and an empty
/// environment, with the descriptors `fa` puts in place.
pub(crate) fn spawn_helper(
    path: &Path,
    argv1: &str,
    fa: &FileActions,
) -> std::io::Result<libc::pid_t> {
    let c_path = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::other("helper path contains NUL"))?;
    let arg1 = CString::new(argv1).map_err(|_| std::io::Error::other("argument contains NUL"))?;
    let argv = [c_path.as_ptr(), arg1.as_ptr(), std::ptr::null()];
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
            c_path.as_ptr(),
            &fa.0,
            &attr,
            argv.as_ptr() as *const *mut libc::c_char,
            envp.as_ptr() as *const *mut libc::c_char,
        );
        libc::posix_spawnattr_destroy(&mut attr);
        rc
    };
    if rc != 0 {
        return Err(std::io::Error::new(
            std::io::Error::from_raw_os_error(rc).kind(),
            format!(
                "cannot start the sandbox helper {}: {}",
                path.display(),
                std::io::Error::from_raw_os_error(rc)
            ),
        ));
    }
    Ok(pid)
}

impl Running {
    /// Kills the child (the hardened command's whole process group, which its descendants
    /// cannot leave; the strict child is pid 1 of its namespace, which dies with it).
    pub fn kill(&self) {
        self.waited.kill();
    }

    /// Waits for the end, reading output with `cap`. The hardened command's group is killed at
    /// `backstop` (the zygote enforces the timeout); the strict child at the policy's timeout.
    ///
    /// One poll loop in the calling thread serves stdout, stderr, the exec-notification
    /// listener and the child's pidfd (the hardened run's socket, which also brings its status
    /// records): no thread is started per run.
    pub fn collect(mut self, cap: Option<u64>, backstop: Option<Duration>) -> Collected {
        let (direct, mut listener, mut supervision, mut records, direct_deadline, mut timed_out) =
            match self.supervisor {
                Supervisor::Zygote => (
                    false,
                    None,
                    crate::supervisor::Supervision::default(),
                    Vec::new(),
                    None,
                    false,
                ),
                Supervisor::Direct {
                    records,
                    listener,
                    supervision,
                    timed_out,
                    deadline,
                } => (true, listener, supervision, records, deadline, timed_out),
            };
        let has_out = self.stdout_r.is_some();
        let mut sinks: Vec<Sink> = Vec::with_capacity(3);
        for (fd, cap) in [(self.stdout_r.take(), cap), (self.stderr_r.take(), cap)] {
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
        let pidfd = self.waited.ready_fd();
        let deadline = if direct {
            direct_deadline
        } else {
            backstop.map(|b| Instant::now() + b)
        };
        let mut status = None;
        let mut helper_cpu = None;
        let mut helper_lost = false;
        let mut status_lost = None;
        let mut run_drained = false;
        let mut killed = timed_out;
        let mut gone_at: Option<Instant> = None;
        loop {
            let open = sinks.iter().any(|s| s.fd.is_some());
            if !open && (status.is_some() || helper_lost || pidfd < 0) {
                break;
            }
            // After a backstop kill, descendants that escaped may keep the pipes open.
            if killed && gone_at.is_some_and(|t| t.elapsed() > Duration::from_millis(500)) {
                break;
            }
            let mut fds: Vec<libc::pollfd> = sinks
                .iter()
                .filter_map(|s| s.fd.as_ref())
                .chain(listener.as_ref())
                .map(|fd| libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            if pidfd >= 0 && status.is_none() && !helper_lost {
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
                    match self.waited.ended(false) {
                        Ended::Not => {}
                        Ended::Status {
                            status: s,
                            cpu,
                            drained,
                        } => {
                            status = Some(s);
                            helper_cpu = cpu;
                            run_drained = drained;
                            gone_at = Some(Instant::now());
                        }
                        Ended::Lost => {
                            helper_lost = true;
                            gone_at = Some(Instant::now());
                        }
                        Ended::StatusLost(why) => {
                            status_lost = Some(why);
                            status = Some(0);
                            gone_at = Some(Instant::now());
                        }
                    }
                } else if listener.as_ref().is_some_and(|l| l.as_raw_fd() == p.fd) {
                    if p.revents & libc::POLLIN != 0 {
                        // Later execs (refused unless the interpreter chain's) and connects.
                        crate::supervisor::answer(
                            p.fd,
                            self.waited.pid(),
                            &mut supervision,
                            crate::supervisor::Answering::Threads,
                        );
                    } else {
                        listener = None;
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
                    // The hardened command's group is killed whole, the strict child's
                    // namespace dies with it.
                    self.waited.kill();
                    killed = true;
                    timed_out = direct;
                }
            }
        }
        let child_status = match status {
            Some(s) => s,
            None if helper_lost => 0,
            None => match self.waited.ended(true) {
                Ended::Status {
                    status,
                    cpu,
                    drained,
                } => {
                    helper_cpu = cpu;
                    run_drained = drained;
                    status
                }
                Ended::Not | Ended::Lost => {
                    helper_lost = true;
                    0
                }
                Ended::StatusLost(why) => {
                    status_lost = Some(why);
                    0
                }
            },
        };
        let mut statuses: Vec<Status> = Vec::new();
        if let Waited::Zygote { records: said, .. } = &mut self.waited {
            records = std::mem::take(said);
        }
        statuses.extend(
            String::from_utf8_lossy(&records)
                .lines()
                .filter_map(|l| serde_json::from_str::<Status>(l).ok()),
        );
        if direct && statuses.is_empty() && !records.is_empty() {
            // Whatever the child said before executing was not a clean record (cut short at
            // the hand-off's limit, say): the command did not run as asked.
            let said = String::from_utf8_lossy(&records);
            statuses.push(Status::Refused(format!(
                "the sandbox's child sent an unreadable report: {}",
                said.chars().take(300).collect::<String>()
            )));
        } else if direct && statuses.is_empty() {
            // The child is the command: its wait status is the run's.
            let (code, signal) = if libc::WIFEXITED(child_status) {
                (Some(libc::WEXITSTATUS(child_status)), None)
            } else {
                (None, Some(libc::WTERMSIG(child_status)))
            };
            statuses.push(Status::Exited {
                code,
                signal,
                timed_out,
            });
        }
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
            child_status,
            backstop_killed: killed && !direct,
            helper_cpu,
            helper_lost,
            status_lost,
            run_drained,
        }
    }
}

/// What [`Waited::ended`] found.
enum Ended {
    /// The strict child ended and its status cannot be had (why).
    StatusLost(String),
    /// Still running.
    Not,
    /// Ended with this wait status; the hardened helper's CPU time with it, and whether every
    /// process of the run was gone.
    Status {
        status: i32,
        cpu: Option<Duration>,
        drained: bool,
    },
    /// The zygote ended without reporting: the outcome is unknown.
    Lost,
}

impl Waited {
    /// The descriptor that polls readable at the end: the pidfd, or the zygote's report.
    fn ready_fd(&self) -> RawFd {
        match self {
            Waited::Child { pidfd, .. } => pidfd.as_ref().map_or(-1, |p| p.as_raw_fd()),
            Waited::Zygote { report, .. } => report.as_raw_fd(),
        }
    }

    /// The pid seccomp notifications are checked against (strict only).
    fn pid(&self) -> libc::pid_t {
        match self {
            Waited::Child { pid, .. } => *pid,
            Waited::Zygote { .. } => -1,
        }
    }

    fn kill(&self) {
        match self {
            // SAFETY: signalling our child.
            Waited::Child { pid, .. } => unsafe {
                libc::kill(*pid, libc::SIGKILL);
            },
            Waited::Zygote { leader, .. } => crate::zygote::kill_run(leader.as_fd()),
        }
    }

    /// Whether it ended (`block`: wait until it does). A status record the zygote's run sent
    /// first is kept for [`Running::collect`].
    fn ended(&mut self, block: bool) -> Ended {
        match self {
            Waited::Child { pid, pidfd } => {
                let pidfd = pidfd.as_ref().map(|p| p.as_fd());
                let status = match block {
                    true => wait_blocking(*pid, pidfd),
                    false => reap(*pid, pidfd),
                };
                match status {
                    Reaped::Status(status) => Ended::Status {
                        status,
                        cpu: None,
                        drained: true,
                    },
                    Reaped::Not => Ended::Not,
                    Reaped::Lost(why) => Ended::StatusLost(why),
                }
            }
            Waited::Zygote {
                leader,
                report,
                records,
            } => loop {
                match crate::zygote::read_report(report.as_fd()) {
                    Report::Ended {
                        status,
                        cpu,
                        drained,
                        record,
                    } => {
                        records.extend_from_slice(&record);
                        break Ended::Status {
                            status,
                            cpu: Some(cpu),
                            drained,
                        };
                    }
                    Report::Record(record) => {
                        records.extend_from_slice(&record);
                        if !block {
                            break Ended::Not;
                        }
                    }
                    // Only one pidfd comes, before this loop: another is not the zygote's.
                    Report::Started(_) | Report::Lost => {
                        // The zygote died during the run: G died with it (parent-death
                        // signal), and what G left is this caller's to kill.
                        crate::zygote::kill_run(leader.as_fd());
                        break Ended::Lost;
                    }
                }
            },
        }
    }
}

/// What reaping the strict child found.
enum Reaped {
    Status(i32),
    Not,
    /// Someone else reaped it and its status cannot be had (why).
    Lost(String),
}

/// Reaps the strict child if it has ended. Where someone else reaped it first (the kernel, for
/// an agent that ignores SIGCHLD; an agent's handler that reaps every child), its status is
/// read back from its pidfd ([`exit_status_of`]).
fn reap(pid: libc::pid_t, pidfd: Option<BorrowedFd<'_>>) -> Reaped {
    let mut s = 0;
    // SAFETY: reaping our child, which the pidfd says has exited.
    let r = unsafe { libc::waitpid(pid, &mut s, libc::WNOHANG) };
    if r == pid {
        return Reaped::Status(s);
    }
    if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ECHILD) {
        return Reaped::Not;
    }
    match pidfd.map(exit_status_of) {
        Some(Ok(Some(status))) => Reaped::Status(status),
        // Reaped an instant ago, its status not recorded yet: the pidfd stays readable, and
        // the next look finds it.
        Some(Ok(None)) => Reaped::Not,
        Some(Err(e)) => Reaped::Lost(format!(
            "the command ended, but its status was reaped before the sandbox could read it \
             (the agent ignores SIGCHLD, or reaps every child), and this kernel keeps no copy \
             ({e}; Linux 6.15 and later do): restore SIGCHLD's default action in the agent"
        )),
        None => Reaped::Lost(
            "the command ended, but its status was reaped before the sandbox could read it \
             (the agent ignores SIGCHLD, or reaps every child): restore SIGCHLD's default \
             action in the agent"
                .into(),
        ),
    }
}

/// [`reap`], waiting until the child has ended.
fn wait_blocking(pid: libc::pid_t, pidfd: Option<BorrowedFd<'_>>) -> Reaped {
    loop {
        match reap(pid, pidfd) {
            Reaped::Not => {}
            done => return done,
        }
        let mut p = libc::pollfd {
            fd: pidfd.map_or(-1, |p| p.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd. The pidfd turns readable when the child ends and stays so,
        // so this blocks until then and no longer; without a pidfd, a short sleep between looks.
        unsafe { libc::poll(&mut p, 1, if p.fd < 0 { 10 } else { -1 }) };
    }
}

/// The wait status of the ended process that `pidfd` refers to, as the kernel keeps it with
/// the pidfd even after someone else reaped the process (Linux 6.15: `PIDFD_GET_INFO` with
/// `PIDFD_INFO_EXIT`). `Ok(None)`: not recorded yet; `Err`: a kernel without it.
fn exit_status_of(pidfd: BorrowedFd<'_>) -> std::io::Result<Option<i32>> {
    /// `struct pidfd_info` of `linux/pidfd.h`, as first published (64 bytes).
    #[repr(C)]
    #[derive(Default)]
    struct PidfdInfo {
        mask: u64,
        cgroupid: u64,
        ids: [u32; 11],
        exit_code: i32,
    }
    const PIDFD_INFO_EXIT: u64 = 1 << 3;
    // _IOWR(0xFF, 11, struct pidfd_info)
    const PIDFD_GET_INFO: libc::c_ulong = 0xC040_FF0B;
    let mut info = PidfdInfo {
        mask: PIDFD_INFO_EXIT,
        ..PidfdInfo::default()
    };
    // SAFETY: the ioctl fills a struct of the size its number encodes.
    if unsafe { libc::ioctl(pidfd.as_raw_fd(), PIDFD_GET_INFO, &mut info) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((info.mask & PIDFD_INFO_EXIT != 0).then_some(info.exit_code))
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
