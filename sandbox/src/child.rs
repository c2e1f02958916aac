//! What a sandboxed child does to itself between its creation and `execve`, in both profiles:
//! the strict profile's namespace child ([`crate::nsclone`]) and the hardened profile's G,
//! started by the zygote ([`crate::zygote`], [`start_hardened`]).
//!
//! Order matters and follows what the kernel needs: capabilities dropped for good, then
//! NO_NEW_PRIVS (Landlock and seccomp need it without privileges), then Landlock, then the
//! rlimits, then seccomp last (so that nothing above is itself filtered). The rlimits come after
//! every allocation: the strict child shares the caller's address space until `execve`, and an
//! address-space limit lower than the caller's size would make its allocations fail.
//!
//! Errors before `execve` are sent on the status channel and end the child with
//! [`REFUSED_EXIT`], so the command never starts half-confined: as [`Status::SetUp`], which
//! names the step and the OS error ([`Refusal`]), or, from the strict view's steps that have
//! no typed form yet, as [`Status::Refused`].

use std::ffi::CString;
use std::os::fd::{BorrowedFd, RawFd};

use crate::request::{Refusal, Request, SetUpStep, Status, STATUS_FD};

/// Exit status of a run the sandbox refused.
pub const REFUSED_EXIT: i32 = 125;

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// The write end of the status channel: JSON lines of [`Status`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reporter(pub RawFd);

impl Reporter {
    /// Sends one record; a failed write only loses the report (the parent then sees a child
    /// that ended without reporting, which it treats as a refusal).
    pub fn report(self, status: &Status) {
        let mut line = serde_json::to_vec(status).unwrap_or_default();
        line.push(b'\n');
        // SAFETY: writing a live buffer to our status fd.
        unsafe { libc::write(self.0, line.as_ptr().cast(), line.len()) };
    }

    /// Reports the refusal and ends the child without running destructors or exit handlers
    /// (the strict child shares them with the caller).
    pub fn refuse(self, message: String) -> ! {
        self.end(&Status::Refused(message))
    }

    /// [`Reporter::refuse`] for a step with a typed refusal.
    pub fn fail(self, refusal: Refusal) -> ! {
        self.end(&Status::SetUp(refusal))
    }

    fn end(self, status: &Status) -> ! {
        self.report(status);
        // SAFETY: leaving the child at once.
        unsafe { libc::_exit(REFUSED_EXIT) }
    }

    /// Reports a failed `execve` without allocating (the rlimits are already in force).
    fn exec_failed(self, errno: i32) -> ! {
        let mut buf = [0u8; 64];
        let mut cursor = &mut buf[..];
        let written = serde_json::to_writer(&mut cursor, &Status::ExecFailed { errno }).is_ok()
            && std::io::Write::write_all(&mut cursor, b"\n").is_ok();
        let len = 64 - cursor.len();
        if written {
            // SAFETY: writing the formatted prefix of a stack buffer.
            unsafe { libc::write(self.0, buf.as_ptr().cast(), len) };
        }
        let code = if errno == libc::ENOENT { 127 } else { 126 };
        // SAFETY: leaving the failed child.
        unsafe { libc::_exit(code) }
    }
}

/// G, the hardened run's process, once the zygote started it with its channels in place and
/// in a process group of its own ([`crate::zygote`]): joins the run's cgroups, enters its
/// working directory, confines itself and executes the command. `req` and `image` live in the
/// zygote's memory, which G shares until `execve`. Never returns.
pub(crate) fn start_hardened(req: &Request, image: &ExecImage, notify: Option<RawFd>) -> ! {
    let reporter = Reporter(STATUS_FD);
    if let Some(mask) = req.inherited.umask {
        // SAFETY: umask takes an integer.
        unsafe { libc::umask(mask as libc::mode_t) };
    }
    // The command's tree, not the zygote, is what the cgroups limit.
    if let Err(e) = crate::cgroup::join(&req.cgroups) {
        reporter.fail(Refusal::new(SetUpStep::Cgroups, e));
    }
    take_scheduling(&req.inherited, &reporter);
    if let Some(cwd) = &req.cwd {
        let _ = std::env::set_current_dir(cwd);
    }
    confine_and_exec(req, image, reporter, notify)
}

/// The agent's scheduling policy, nice value, I/O priority, timer slack, OOM score adjustment,
/// personality and CPU affinity, where they changed since the zygote started: a command that
/// silently ran under another policy or priority, woke at other times, was killed in another
/// order, or ran on CPUs the agent left,
/// would differ from a strict run's, whose child the calling thread's `clone` gives them all.
fn take_scheduling(inherited: &crate::request::Inherited, reporter: &Reporter) {
    if let Some((policy, priority)) = inherited.policy {
        if policy == libc::SCHED_DEADLINE {
            reporter.fail(Refusal::new(
                SetUpStep::Scheduling,
                "the agent's calling thread runs under SCHED_DEADLINE, which the kernel passes \
                 to no child (a plain spawn or a strict run from it fails with EAGAIN); set \
                 SCHED_RESET_ON_FORK on that thread, or run the tool from another one",
            ));
        }
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: sched_setscheduler of this process (pid 0) with a valid struct.
        if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
            reporter.fail(Refusal::last_os(
                SetUpStep::Scheduling,
                &format!(
                    "the agent's scheduling policy {} at priority {priority}",
                    policy_name(policy)
                ),
            ));
        }
    }
    if let Some(nice) = inherited.nice {
        // SAFETY: setpriority of this process (who = 0) takes integers.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } != 0 {
            reporter.fail(Refusal::last_os(
                SetUpStep::Scheduling,
                &format!("the agent's nice value {nice}"),
            ));
        }
    }
    if let Some(ioprio) = inherited.ioprio {
        const IOPRIO_WHO_PROCESS: libc::c_long = 1;
        // SAFETY: ioprio_set of this process's only thread (who = 0) takes integers.
        if unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, ioprio) } != 0 {
            reporter.fail(Refusal::last_os(
                SetUpStep::Scheduling,
                &format!(
                    "the agent's I/O priority (class {}, level {})",
                    ioprio >> 13,
                    ioprio & 0xff
                ),
            ));
        }
    }
    if let Some(adj) = inherited.oom_score_adj {
        let written = std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/self/oom_score_adj")
            .and_then(|mut f| std::io::Write::write_all(&mut f, adj.to_string().as_bytes()));
        if let Err(e) = written {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            reporter.fail(Refusal::os(
                SetUpStep::Scheduling,
                &format!("the agent's OOM score adjustment {adj}"),
                errno,
            ));
        }
    }
    if let Some(slack) = inherited.timer_slack {
        // After the policy: the kernel ignores a slack set under a real-time one.
        // SAFETY: PR_SET_TIMERSLACK of this process's only thread takes an integer.
        if unsafe { libc::syscall(libc::SYS_prctl, libc::PR_SET_TIMERSLACK, slack, 0, 0, 0) } != 0 {
            reporter.fail(Refusal::last_os(
                SetUpStep::Scheduling,
                &format!("the agent's timer slack of {slack} ns"),
            ));
        }
    }
    if let Some(persona) = inherited.personality {
        // SAFETY: personality of this process takes an integer.
        if unsafe { libc::personality(persona as libc::c_ulong) } < 0 {
            reporter.fail(Refusal::last_os(
                SetUpStep::Scheduling,
                &format!("the agent's personality {persona:#x}"),
            ));
        }
    }
    if let Some(words) = &inherited.affinity {
        // SAFETY: an all-zero cpu_set_t is a valid empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let bits = 8 * std::mem::size_of::<u64>();
        for (i, word) in words.iter().enumerate() {
            for bit in (0..bits).filter(|b| word >> b & 1 == 1) {
                if i * bits + bit < libc::CPU_SETSIZE as usize {
                    // SAFETY: a CPU number below CPU_SETSIZE, in our own set.
                    unsafe { libc::CPU_SET(i * bits + bit, &mut set) };
                }
            }
        }
        // SAFETY: sched_setaffinity of this process with a set of the size given.
        if unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) } != 0 {
            reporter.fail(Refusal::last_os(
                SetUpStep::Scheduling,
                "the agent's CPU affinity (EINVAL: the cpuset of the run's cgroups holds none \
                 of the calling thread's CPUs; pin the agent to CPUs its cgroup allows)",
            ));
        }
    }
}

/// A scheduling policy's name, for a refusal.
fn policy_name(policy: i32) -> std::borrow::Cow<'static, str> {
    match policy {
        libc::SCHED_OTHER => "SCHED_OTHER".into(),
        libc::SCHED_FIFO => "SCHED_FIFO".into(),
        libc::SCHED_RR => "SCHED_RR".into(),
        libc::SCHED_BATCH => "SCHED_BATCH".into(),
        libc::SCHED_IDLE => "SCHED_IDLE".into(),
        libc::SCHED_DEADLINE => "SCHED_DEADLINE".into(),
        other => format!("number {other}").into(),
    }
}

/// What `execve` and seccomp need, built before the child starts: the strict child must not
/// allocate once its rlimits are set.
pub(crate) struct ExecImage {
    program: CString,
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    _env: Vec<CString>,
    env_ptrs: Vec<*const libc::c_char>,
    filter: Vec<libc::sock_filter>,
    /// [`crate::seccomp::Filters::tail`], unpacked.
    tail: Vec<libc::sock_filter>,
    /// Set by the zygote when it runs under `filter` itself ([`crate::zygote`], one zygote per
    /// program and tail): the command inherits it and installs at most the tail.
    pub(crate) filter_inherited: std::cell::Cell<bool>,
    /// Set by the zygote when it also runs under `tail`, sealed with its own secret: the
    /// command's process installs nothing, and these are the registers that carry that secret
    /// ([`crate::seccomp::secret_registers`]).
    pub(crate) tail_inherited: std::cell::Cell<Option<[u64; 3]>>,
}

impl ExecImage {
    /// Converts the request's program, argv, environment and filters.
    ///
    /// # Errors
    ///
    /// An argument or environment entry contains a NUL byte.
    pub fn new(req: &Request) -> Result<ExecImage, String> {
        let cstring = |bytes: &[u8]| {
            CString::new(bytes).map_err(|_| {
                format!(
                    "an argument or environment entry contains a NUL byte: {:?}",
                    String::from_utf8_lossy(bytes)
                )
            })
        };
        let program = cstring(req.program.as_os_str().as_encoded_bytes())?;
        let argv = req
            .argv
            .iter()
            .map(|a| cstring(a))
            .collect::<Result<Vec<_>, _>>()?;
        let env = req
            .env
            .iter()
            .map(|e| cstring(e))
            .collect::<Result<Vec<_>, _>>()?;
        let pointers = |list: &[CString]| {
            let mut p: Vec<*const libc::c_char> = list.iter().map(|c| c.as_ptr()).collect();
            p.push(std::ptr::null());
            p
        };
        Ok(ExecImage {
            program,
            argv_ptrs: pointers(&argv),
            env_ptrs: pointers(&env),
            _argv: argv,
            _env: env,
            filter: crate::seccomp::unpack(&req.filters.program),
            tail: crate::seccomp::unpack(&req.filters.tail),
            filter_inherited: std::cell::Cell::new(false),
            tail_inherited: std::cell::Cell::new(None),
        })
    }
}

/// A refusal of `step` for a failed I/O call `what`, with its OS error when it has one.
pub(crate) fn io_refusal(step: SetUpStep, what: &str, e: &std::io::Error) -> Refusal {
    match e.raw_os_error() {
        Some(errno) => Refusal::os(step, what, errno),
        None => Refusal::new(step, format!("{what}: {e}")),
    }
}

/// Writes the user namespace's maps: the caller's uid and gid become 1000 inside, not 0, so
/// that after `execve` the command holds no capability at all. `proc_self`: this process's
/// directory on a procfs opened earlier (the leased view's `/proc` is read-only by the time the
/// child has a user namespace of its own), or `None` for `/proc/self`.
pub(crate) fn write_id_maps(
    proc_self: Option<&std::fs::File>,
    euid: libc::uid_t,
    egid: libc::gid_t,
) -> Result<(), String> {
    write_maps(proc_self, (1000, euid), (1000, egid))
}

/// Denies `setgroups` and maps the uid `uid.0` inside to `uid.1` outside, and the gid likewise,
/// in the user namespace of `proc_self` (a `/proc/<pid>` directory; `None`: this process's).
pub(crate) fn write_maps(
    proc_self: Option<&std::fs::File>,
    uid: (libc::uid_t, libc::uid_t),
    gid: (libc::gid_t, libc::gid_t),
) -> Result<(), String> {
    use std::io::Write;
    use std::os::fd::{AsRawFd, FromRawFd};
    let dir = proc_self.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    let base = if proc_self.is_some() {
        ""
    } else {
        "/proc/self/"
    };
    let maps = [
        (c"setgroups", "deny".to_string()),
        (c"uid_map", format!("{} {} 1", uid.0, uid.1)),
        (c"gid_map", format!("{} {} 1", gid.0, gid.1)),
    ];
    for (file, content) in maps {
        let name = file.to_string_lossy();
        let path = std::ffi::CString::new(format!("{base}{name}"))
            .map_err(|_| format!("writing {name}: a NUL"))?;
        // SAFETY: openat with a C string; the new descriptor is owned below.
        let fd = unsafe { libc::openat(dir, path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(format!("writing {base}{name}: {}", errno()));
        }
        // SAFETY: a new descriptor owned here.
        let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
        f.write_all(content.as_bytes())
            .map_err(|e| format!("writing {base}{name}: {e}"))?;
    }
    Ok(())
}

/// Moves this child into a user namespace of its own and writes its maps (see
/// [`write_id_maps`]); until here it held the caller's privileges.
pub(crate) fn own_user_namespace(
    proc_self: &std::fs::File,
    euid: libc::uid_t,
    egid: libc::gid_t,
) -> Result<(), String> {
    // SAFETY: unshare without pointers; this child is single-threaded and not chrooted.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER) } != 0 {
        return Err(format!("unshare a user namespace: {}", errno()));
    }
    write_id_maps(Some(proc_self), euid, egid)
}

/// Brings `lo` up in a new network namespace (for the egress listeners).
pub(crate) fn loopback_up() -> std::io::Result<()> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: an ioctl pair on a throwaway socket with a zeroed ifreq naming "lo".
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(errno());
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        if libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr) < 0 {
            return Err(errno());
        }
        ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(fd.as_raw_fd(), libc::SIOCSIFFLAGS, &ifr) < 0 {
            return Err(errno());
        }
    }
    Ok(())
}

/// Every restriction, in the order the kernel needs, then `execve`. Never returns.
///
/// `notify` is the channel on which the exec-notification listener goes to the supervisor
/// (exec = deny). Signals stay as the caller left them until just before `execve`, where the
/// mask is emptied.
pub(crate) fn confine_and_exec(
    req: &Request,
    image: &ExecImage,
    reporter: Reporter,
    notify: Option<RawFd>,
) -> ! {
    confine_view_and_exec(req, image, reporter, notify, None)
}

/// The descriptors of the strict view's binds, for their Landlock rules.
pub(crate) enum ViewBound<'a> {
    /// Opened by this child while it built the view; closed once the ruleset is built.
    Own(crate::mounts::BoundSources),
    /// The view template's, kept since its build, with this run's copy.
    Template(&'a crate::mounts::template::ViewCopy),
}

impl ViewBound<'_> {
    /// Closes this child's descriptors of the view once the ruleset is built, so that the
    /// command's open-files limit counts none of them.
    fn release(self) {
        match self {
            ViewBound::Own(bound) => drop(bound),
            ViewBound::Template(copy) => copy.close_in_child(),
        }
    }

    /// The descriptor the view shows at `path` and whether it is a directory, where the view
    /// holds one: a bind's root, or a leased view's per-run directory
    /// ([`crate::mounts::template::ViewCopy::per_run_dir`]).
    pub(crate) fn opened(&self, path: &std::path::Path) -> Option<(BorrowedFd<'_>, bool)> {
        match self {
            ViewBound::Own(bound) => bound.get(path),
            ViewBound::Template(copy) => copy
                .per_run_dir(path)
                .map(|fd| (fd, true))
                .or_else(|| copy.bound().get(path)),
        }
    }
}

impl std::ops::Deref for ViewBound<'_> {
    type Target = crate::mounts::BoundSources;

    fn deref(&self) -> &crate::mounts::BoundSources {
        match self {
            ViewBound::Own(b) => b,
            ViewBound::Template(copy) => copy.bound(),
        }
    }
}

/// What the strict child's view left open for [`confine_view_and_exec`].
pub(crate) struct BuiltView<'a> {
    /// The binds' descriptors, for their Landlock rules.
    pub bound: ViewBound<'a>,
    /// The soft limit on open files to put back once they are closed (it was lifted to hold
    /// one descriptor per bind).
    pub open_files: Option<libc::rlimit>,
}

/// [`confine_and_exec`] for the strict child: its Landlock rules for bound paths come from
/// the descriptors of `view`.
pub(crate) fn confine_view_and_exec(
    req: &Request,
    image: &ExecImage,
    reporter: Reporter,
    notify: Option<RawFd>,
    view: Option<BuiltView<'_>>,
) -> ! {
    // Only the strict child has a view, and it always runs in a user namespace of its own.
    let held = if view.is_some() {
        Held::OwnUserNamespace
    } else {
        Held::Caller
    };
    if let Err(e) = drop_all_capabilities(held) {
        reporter.fail(e);
    }
    // SAFETY: prctl with integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        reporter.fail(Refusal::last_os(
            SetUpStep::NoNewPrivs,
            "PR_SET_NO_NEW_PRIVS",
        ));
    }
    let landlock = match (&view, req.ruleset_fd) {
        (Some(view), _) => {
            crate::landlock_rules::restrict_self_bound(&req.landlock, &|p| view.bound.opened(p))
        }
        (None, Some(fd)) => crate::landlock_rules::restrict_self_with(fd),
        (None, None) => crate::landlock_rules::restrict_self(&req.landlock),
    };
    if let Err(e) = landlock {
        reporter.fail(Refusal::new(SetUpStep::Landlock, e));
    }
    if let Some(view) = view {
        view.bound.release();
        if let Some(limit) = view.open_files {
            // SAFETY: setrlimit with a valid struct.
            unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
        }
    }
    // The agent's own limits first (hardened: those its zygote holds older values of), so
    // that the policy's, set next, override them and fail as a strict child's would above
    // a hard limit the agent lowered.
    for &(resource, soft, hard) in &req.inherited.rlimits {
        let rl = libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        };
        // SAFETY: setrlimit with a valid struct.
        if unsafe { libc::setrlimit(resource as _, &rl) } != 0 {
            reporter.fail(Refusal::last_os(
                SetUpStep::ResourceLimits,
                &format!("the agent's resource limit {resource} ({soft}, hard {hard})"),
            ));
        }
    }
    for &(resource, limit) in &req.rlimits {
        let rl = libc::rlimit {
            rlim_cur: limit,
            rlim_max: limit,
        };
        // SAFETY: setrlimit with a valid struct.
        if unsafe { libc::setrlimit(resource as _, &rl) } != 0 {
            reporter.fail(Refusal::last_os(
                SetUpStep::ResourceLimits,
                &format!("setrlimit({resource}, {limit})"),
            ));
        }
    }
    let (listener, secret) = match install_filters(image, req) {
        Ok(installed) => installed,
        Err(e) => reporter.fail(io_refusal(
            SetUpStep::Seccomp,
            "installing the seccomp filter",
            &e,
        )),
    };
    if let Some(listener) = listener {
        let Some(channel) = notify else {
            reporter.fail(Refusal::new(
                SetUpStep::Seccomp,
                "exec supervision without a channel to the supervisor",
            ));
        };
        // SAFETY: both descriptors are open until closed just below.
        let sent = unsafe {
            crate::fdpass::send_one(
                BorrowedFd::borrow_raw(channel),
                BorrowedFd::borrow_raw(listener),
            )
        };
        if let Err(e) = sent {
            reporter.fail(io_refusal(
                SetUpStep::Seccomp,
                "handing the exec listener to the supervisor",
                &e,
            ));
        }
        // SAFETY: our copies are no longer needed.
        unsafe {
            libc::close(listener);
            libc::close(channel);
        }
    }
    // SAFETY: mark every fd above stderr close-on-exec, empty the signal mask, execute.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        match secret {
            // The sealed tail admits this call by the registers `execve` does not read.
            Some(registers) => crate::seccomp::execve_sealed(
                image.program.as_ptr(),
                image.argv_ptrs.as_ptr(),
                image.env_ptrs.as_ptr(),
                registers,
            ),
            None => libc::execve(
                image.program.as_ptr(),
                image.argv_ptrs.as_ptr(),
                image.env_ptrs.as_ptr(),
            ) as libc::c_long,
        };
        reporter.exec_failed(*libc::__errno_location())
    }
}

/// The longest tail [`install_filters`] seals on its stack (it has at most 41 instructions).
const MAX_TAIL: usize = 64;

/// Installs what the process does not already run under: the program unless it was
/// inherited, then the tail if there is one and it was not inherited, sealed with a secret
/// drawn here ([`crate::seccomp::seal`]; an unsealed tail would admit `setpgid` and `execve`
/// with those registers zero). Returns the `execve` listener, which belongs to the tail when
/// there is one ([`crate::seccomp::Filters`]), and the registers the command's `execve` must
/// carry: this tail's secret, or the zygote's for a tail inherited. Allocates nothing on
/// success.
fn install_filters(
    image: &ExecImage,
    req: &Request,
) -> std::io::Result<(Option<RawFd>, Option<[u64; 3]>)> {
    let exec_notify = req.exec_notify;
    let split = !image.tail.is_empty();
    let inherited = image.filter_inherited.get();
    if inherited && !split {
        // Only a split filter has a program to inherit: anything else would start the command
        // without its `execve` supervision.
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "an inherited seccomp program without its tail (a bug in toolpolicy's sandbox; \
             please report it with the policy)",
        ));
    }
    // The zygote sets it only for a request whose program and tail are the ones it runs
    // under, without a listener (`zygote::server::start_run` refuses any other).
    if let Some(registers) = image.tail_inherited.get() {
        return Ok((None, Some(registers)));
    }
    if !inherited {
        let listener = crate::seccomp::install(&image.filter, exec_notify && !split)?;
        if !split {
            return Ok((listener, None));
        }
    }
    let refused = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, what);
    let n = image.tail.len();
    if n > MAX_TAIL {
        return Err(refused(
            "a seccomp tail longer than its room (a bug in toolpolicy's sandbox)",
        ));
    }
    let mut tail = [libc::sock_filter {
        code: 0,
        jt: 0,
        jf: 0,
        k: 0,
    }; MAX_TAIL];
    tail[..n].copy_from_slice(&image.tail);
    let words = crate::seccomp::draw_secret()?;
    if !crate::seccomp::seal(&mut tail[..n], &words) {
        return Err(refused(
            "the seccomp tail has no place for the exec secret (a bug in toolpolicy's sandbox; \
             please report it with the policy)",
        ));
    }
    let listener = crate::seccomp::install(&tail[..n], exec_notify)?;
    Ok((listener, Some(crate::seccomp::secret_registers(&words))))
}

/// Set in the hardened zygote once [`lock_for_children`] locked its securebits and emptied its
/// bounding set: every G it forks has both from the fork (the kernel copies them; locked
/// securebits cannot be unset and the bounding set only shrinks), so G skips those 40-odd
/// system calls, each of which replaces the process's credentials.
static LOCKED_FOR_CHILDREN: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// In the hardened zygote, once at its start: the securebits and bounding set of
/// [`drop_capabilities`] for itself (it never executes anything, so they change nothing for
/// it), inherited by every G it forks. Its effective capabilities stay (a G joins its run's
/// cgroups with them before dropping them). Nothing to do without `CAP_SETPCAP`.
pub(crate) fn lock_for_children() {
    if has_effective_cap(8) && lock_securebits_and_bounding_set().is_ok() {
        LOCKED_FOR_CHILDREN.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Securebits (root keeps no capability across execve, locked) and an empty bounding set.
/// Needs `CAP_SETPCAP`.
fn lock_securebits_and_bounding_set() -> Result<(), Refusal> {
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
    const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
    const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
    const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
    const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
    let bits = SECBIT_NOROOT
        | SECBIT_NOROOT_LOCKED
        | SECBIT_NO_SETUID_FIXUP
        | SECBIT_NO_SETUID_FIXUP_LOCKED
        | SECBIT_KEEP_CAPS_LOCKED
        | SECBIT_NO_CAP_AMBIENT_RAISE
        | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    // SAFETY: prctl with integers.
    unsafe {
        if libc::prctl(libc::PR_SET_SECUREBITS, bits) != 0 {
            return Err(Refusal::last_os(
                SetUpStep::Capabilities,
                "PR_SET_SECUREBITS",
            ));
        }
        // One call per capability: EINVAL marks the first number past the kernel's last
        // capability (a PR_CAPBSET_READ before each drop would double the calls).
        for cap in 0..=63 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap) != 0 {
                if *libc::__errno_location() == libc::EINVAL && cap > 0 {
                    break;
                }
                return Err(Refusal::last_os(
                    SetUpStep::Capabilities,
                    &format!("PR_CAPBSET_DROP({cap})"),
                ));
            }
        }
    }
    Ok(())
}

/// Drops every capability for good: securebits (root keeps none across execve), bounding and
/// ambient sets, then the current sets. In a G of a zygote that did [`lock_for_children`], the
/// first two are already in place.
pub(crate) fn drop_capabilities() -> Result<(), String> {
    drop_all_capabilities(Held::Caller).map_err(|r| r.message)
}

/// Whose capabilities a process about to confine itself holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Held {
    /// The caller's: the hardened command's process, or a process confining itself.
    Caller,
    /// Those of a user namespace the strict child made for itself, whose uid inside is not 0.
    OwnUserNamespace,
}

/// [`drop_capabilities`], with the step and OS error of a failure.
///
/// In [`Held::OwnUserNamespace`] the securebits and the bounding set are left as the kernel
/// made them: it sets both back to their defaults (a full bounding set) in every new user
/// namespace, so an emptied one guarded nothing there. What keeps the command without
/// capabilities is the empty permitted set made here with NO_NEW_PRIVS, set next: an `execve`
/// under NO_NEW_PRIVS never raises the permitted set above the one it had, whatever the
/// program's set-user-ID bit or file capabilities, and the inner uid is not 0. Each of the 41
/// drops replaced the process's credentials, about 55 µs per run in all
/// (`tests/capabilities.rs` runs a program with file capabilities in both profiles).
fn drop_all_capabilities(held: Held) -> Result<(), Refusal> {
    // SAFETY: prctl/capset with valid arguments.
    unsafe {
        let inherited = LOCKED_FOR_CHILDREN.load(std::sync::atomic::Ordering::Relaxed);
        if held == Held::Caller && !inherited && has_effective_cap(8) {
            lock_securebits_and_bounding_set()?;
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let header = CapHeader {
            version: 0x2008_0522,
            pid: 0,
        };
        let data = [CapData::default(); 2];
        if libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) != 0 {
            return Err(Refusal::last_os(SetUpStep::Capabilities, "capset"));
        }
    }
    Ok(())
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

pub(crate) fn has_effective_cap(cap: u32) -> bool {
    let header = CapHeader {
        version: 0x2008_0522,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget fills two CapData.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &header as *const CapHeader,
            data.as_mut_ptr(),
        )
    };
    rc == 0 && data[(cap / 32) as usize].effective & (1 << (cap % 32)) != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Inherited, SetUpStep};

    /// How a child's `before` says that it could not prepare the case.
    const PREPARATION_FAILED: i32 = 3;

    /// What a forked child that runs `before`, then takes `inherited`'s scheduling, reports,
    /// and how it exits (0 when it took them).
    fn take_in_child(inherited: &Inherited, before: fn()) -> (Option<Status>, i32) {
        let mut fds = [-1; 2];
        // SAFETY: pipe2 fills the array.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: the child reports on the pipe and leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            before();
            take_scheduling(inherited, &Reporter(fds[1]));
            // SAFETY: leaving the forked child at once.
            unsafe { libc::_exit(0) };
        }
        // SAFETY: closing our copy of the write end, reading into a live buffer, reaping our
        // child.
        let (report, status) = unsafe {
            libc::close(fds[1]);
            let mut buf = vec![0u8; 4096];
            let got = libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len());
            libc::close(fds[0]);
            buf.truncate(got.max(0) as usize);
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            (buf, status)
        };
        assert!(libc::WIFEXITED(status), "child status {status:#x}");
        let report = (!report.is_empty())
            .then(|| serde_json::from_slice(report.trim_ascii_end()).expect("a status record"));
        (report, libc::WEXITSTATUS(status))
    }

    /// Asserts that a forked child that runs `before` refuses to take `inherited`, at the
    /// scheduling step, with `errno` (`None`: a refusal of its own) and a message that names
    /// `what`.
    fn assert_scheduling_refused(
        inherited: &Inherited,
        before: fn(),
        errno: Option<i32>,
        what: &str,
    ) {
        match take_in_child(inherited, before) {
            (Some(Status::SetUp(refusal)), REFUSED_EXIT) => {
                assert_eq!(refusal.step, SetUpStep::Scheduling);
                assert_eq!(refusal.errno, errno);
                assert!(refusal.message.contains(what), "{}", refusal.message);
            }
            (None, PREPARATION_FAILED) => panic!("the test's own preparation failed in the child"),
            other => panic!("the child took {inherited:?}: {other:?}"),
        }
    }

    #[test]
    fn an_affinity_the_kernel_refuses_fails_the_set_up() {
        // CPU 1000 fits a cpu_set_t (1,024 CPUs) and is on no machine this runs on: the kernel
        // refuses the set with EINVAL, as it does one that the run's cpuset excludes.
        let mut words = vec![0u64; libc::CPU_SETSIZE as usize / 64];
        words[1000 / 64] = 1 << (1000 % 64);
        let inherited = Inherited {
            affinity: Some(words),
            ..Inherited::default()
        };
        assert_scheduling_refused(&inherited, || {}, Some(libc::EINVAL), "CPU affinity");
    }

    #[test]
    fn a_nice_value_the_process_may_not_take_fails_the_set_up() {
        // A process without CAP_SYS_NICE and with RLIMIT_NICE at 0 cannot lower its nice
        // value: a G that could not follow the agent's (a zygote started at a higher one, an
        // agent that lowered its own since) must refuse, not run at another priority. Nice 19
        // can be taken from any value without a privilege.
        fn unprivileged_at_nice_19() {
            // SAFETY: setting this process's own nice value.
            if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) } != 0 {
                // SAFETY: leaving the forked child at once.
                unsafe { libc::_exit(PREPARATION_FAILED) };
            }
            without_limit_or_capabilities(libc::RLIMIT_NICE);
        }
        let inherited = Inherited {
            nice: Some(0),
            ..Inherited::default()
        };
        assert_scheduling_refused(
            &inherited,
            unprivileged_at_nice_19,
            Some(libc::EACCES),
            "nice value 0",
        );
    }

    #[test]
    fn a_real_time_policy_the_process_may_not_take_fails_the_set_up() {
        // Without CAP_SYS_NICE and with RLIMIT_RTPRIO at 0, no real-time policy can be taken:
        // a G that could not follow the agent must refuse, not run under another policy.
        fn unprivileged_without_real_time() {
            without_limit_or_capabilities(libc::RLIMIT_RTPRIO);
        }
        let inherited = Inherited {
            policy: Some((libc::SCHED_FIFO, 1)),
            ..Inherited::default()
        };
        assert_scheduling_refused(
            &inherited,
            unprivileged_without_real_time,
            Some(libc::EPERM),
            "SCHED_FIFO at priority 1",
        );
    }

    /// Empties this child's capability sets, or leaves it with [`PREPARATION_FAILED`].
    fn without_capabilities() {
        let header = [0x2008_0522u32, 0];
        let data = [0u32; 6];
        // SAFETY: setting this process's own capabilities.
        if unsafe { libc::syscall(libc::SYS_capset, header.as_ptr(), data.as_ptr()) } != 0 {
            // SAFETY: leaving the forked child at once.
            unsafe { libc::_exit(PREPARATION_FAILED) };
        }
    }

    /// Sets this child's `resource` limit to 0 and empties its capability sets, or leaves it
    /// with [`PREPARATION_FAILED`].
    fn without_limit_or_capabilities(resource: libc::__rlimit_resource_t) {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setting this process's own limit.
        if unsafe { libc::setrlimit(resource, &none) } != 0 {
            // SAFETY: leaving the forked child at once.
            unsafe { libc::_exit(PREPARATION_FAILED) };
        }
        without_capabilities();
    }

    #[test]
    fn a_real_time_io_class_the_process_may_not_take_fails_the_set_up() {
        let inherited = Inherited {
            ioprio: Some(1 << 13 | 4),
            ..Inherited::default()
        };
        assert_scheduling_refused(
            &inherited,
            without_capabilities,
            Some(libc::EPERM),
            "I/O priority (class 1, level 4)",
        );
    }

    #[test]
    fn an_oom_score_adjustment_the_process_may_not_lower_to_fails_the_set_up() {
        // Raised to 1000 first, then asked for -1000 without CAP_SYS_RESOURCE.
        fn raised_without_capabilities() {
            if std::fs::write("/proc/self/oom_score_adj", "1000").is_err() {
                // SAFETY: leaving the forked child at once.
                unsafe { libc::_exit(PREPARATION_FAILED) };
            }
            without_capabilities();
        }
        let inherited = Inherited {
            oom_score_adj: Some(-1000),
            ..Inherited::default()
        };
        assert_scheduling_refused(
            &inherited,
            raised_without_capabilities,
            Some(libc::EACCES),
            "OOM score adjustment -1000",
        );
    }

    #[test]
    fn a_deadline_policy_is_refused_with_its_reason() {
        let inherited = Inherited {
            policy: Some((libc::SCHED_DEADLINE, 0)),
            ..Inherited::default()
        };
        assert_scheduling_refused(&inherited, || {}, None, "SCHED_RESET_ON_FORK");
    }

    #[test]
    fn scheduling_values_the_kernel_accepts_are_taken() {
        // This thread's own affinity, and a nice value no lower than its own (raising it needs
        // no privilege).
        // SAFETY: an all-zero cpu_set_t is valid; sched_getaffinity fills it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of_val(&set);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::sched_getaffinity(0, size, &mut set) }, 0);
        // SAFETY: cpu_set_t is plain words.
        let words: Vec<u64> = unsafe {
            std::slice::from_raw_parts((&set as *const libc::cpu_set_t).cast::<u64>(), size / 8)
        }
        .to_vec();
        // SAFETY: getpriority of this thread takes integers (errno is not checked: the
        // value is clamped to 19 below).
        let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let inherited = Inherited {
            affinity: Some(words),
            nice: Some((nice + 1).min(19)),
            policy: Some((libc::SCHED_BATCH, 0)),
            ioprio: Some(3 << 13),
            oom_score_adj: Some(1000),
            ..Inherited::default()
        };
        assert!(matches!(take_in_child(&inherited, || {}), (None, 0)));
    }
}
