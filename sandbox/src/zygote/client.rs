//! The agent's side: the registry of its zygotes, their start and end, and one run's hand-over
//! (see [`super`]).

use std::collections::HashMap;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use super::inherit::{Fit, Inheritance};
use super::START_TIMEOUT;
use super::{errno, kill_group, Group, CONTROL_FD, ENDED, ENDED_LEN, FLOOR, RETIRE, RUN};
use super::{INLINE_MAX, MAX_RECORD, PROGRAM, RUN_INLINE, TAIL};
use crate::per_process::PerProcess;
use crate::runner::RunError;
use crate::spawn::{FileActions, Running, Stdio, Streams, Supervisor, Waited};

/// A zygote this process started.
struct Zygote {
    pid: libc::pid_t,
    pidfd: OwnedFd,
    control: OwnedFd,
    /// What the agent was when it started this zygote, which its runs inherit.
    started_as: Standing,
    /// The umask, resource limits and cgroups it holds (`None`: unknown, see
    /// [`Inheritance::of_new_zygote`]).
    holds: Option<Inheritance>,
    /// Told to end once its runs are over (a run from the agent as it is now needs another).
    retired: AtomicBool,
    /// When it started ([`running`] names the newest).
    started: std::time::Instant,
    /// How the agent asks the kernel whether it may still inspect this zygote
    /// ([`Zygote::outside_the_callers_domain`]): the first way that answered yes at its start;
    /// `None` where none did, and then a Landlock domain the agent enters later goes unseen.
    domain_check: Option<Inspect>,
}

/// A `ptrace` read-access check of another process, which Landlock allows only for a process
/// inside the caller's own domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Inspect {
    /// `kcmp` of the two memory maps: one system call that asks nothing else of the kernel
    /// (about 0.4 µs). Container runtimes' seccomp profiles commonly refuse it to processes
    /// without `CAP_SYS_PTRACE` (Docker's does).
    Kcmp,
    /// `readlink` of the process's `/proc/PID/ns/net`, which the kernel shows only to a
    /// process that may inspect it (about 2 µs; Landlock does not govern `readlink`, so the
    /// agent's own path rules do not refuse it).
    NamespaceLink,
}

impl Inspect {
    /// The first check that lets the calling thread inspect `pid`.
    fn first_allowed(pid: libc::pid_t) -> Option<Inspect> {
        [Inspect::Kcmp, Inspect::NamespaceLink]
            .into_iter()
            .find(|check| check.allows(pid))
    }

    /// Whether the calling thread may inspect `pid` this way.
    fn allows(self, pid: libc::pid_t) -> bool {
        match self {
            Inspect::Kcmp => {
                const KCMP_VM: libc::c_long = 1;
                // SAFETY: kcmp takes integers and changes nothing.
                unsafe { libc::syscall(libc::SYS_kcmp, libc::getpid(), pid, KCMP_VM, 0, 0) >= 0 }
            }
            Inspect::NamespaceLink => {
                let link = std::ffi::CString::new(format!("/proc/{pid}/ns/net"))
                    .expect("no NUL in a number");
                crate::netns::namespace_inode(&link, None).is_ok()
            }
        }
    }
}

/// Which zygote serves a run: the helper binary and what the zygote runs under
/// ([`RunsUnder`]). The hardened profile's options make few programs and tails (the network
/// denied or allowed, metadata writes refused or not, exec denied or not), so an agent keeps a
/// zygote for each pair it has used.
type Key = (PathBuf, RunsUnder);

/// The seccomp program a zygote runs under (empty: none, for the bench's floor), and the tail
/// it holds for its commands (empty: each command installs its own, sealed with a secret of
/// its run; always so for a tail that needs a listener, which is one per run).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct RunsUnder {
    program: Vec<u64>,
    tail: Vec<u64>,
}

/// What a zygote inherits from the agent and keeps, whatever the agent becomes later: its
/// user, group and supplementary group ids, NO_NEW_PRIVS and seccomp mode. A run from an agent
/// whose standing changed (it dropped root or a group, or was filtered) must not run with the
/// old one: it ends the old zygote and starts a new one. (What else confines the agent, which
/// it can only add to, is compared at each run as well: [`Inheritance`] and
/// [`Zygote::outside_the_callers_domain`].)
#[derive(Clone, Debug, PartialEq, Eq)]
struct Standing {
    uids: [libc::uid_t; 3],
    gids: [libc::gid_t; 3],
    /// The supplementary groups, as `getgroups` lists them (`None`: they could not be read).
    groups: Option<Vec<libc::gid_t>>,
    no_new_privs: i32,
    seccomp: i32,
}

impl Standing {
    fn now() -> Standing {
        let (mut uids, mut gids) = ([0; 3], [0; 3]);
        // SAFETY: the calls fill the given integers or take integers.
        unsafe {
            libc::getresuid(&mut uids[0], &mut uids[1], &mut uids[2]);
            libc::getresgid(&mut gids[0], &mut gids[1], &mut gids[2]);
            Standing {
                uids,
                gids,
                groups: groups(),
                no_new_privs: libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0),
                seccomp: libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0),
            }
        }
    }
}

/// This process's supplementary groups.
fn groups() -> Option<Vec<libc::gid_t>> {
    let mut list = vec![0; 64];
    loop {
        // SAFETY: getgroups fills at most `list.len()` entries of the given buffer.
        let n = unsafe { libc::getgroups(list.len() as libc::c_int, list.as_mut_ptr()) };
        if n >= 0 {
            list.truncate(n as usize);
            return Some(list);
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
            return None;
        }
        // More than fit: ask the count, which another thread may change before the next try.
        // SAFETY: a count query takes no buffer.
        let count = unsafe { libc::getgroups(0, std::ptr::null_mut()) };
        list.resize(count.max(0) as usize + 1, 0);
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        forget_control(self.control.as_raw_fd());
    }
}

/// The zygotes of this process.
#[derive(Default)]
struct Zygotes {
    /// The one that serves new runs, by helper binary and program.
    live: HashMap<Key, Arc<Zygote>>,
    /// Those retired, until they end (after the runs they received) and are reaped.
    retired: Vec<Arc<Zygote>>,
}

static REGISTRY: PerProcess<Zygotes> = PerProcess::new();

/// This process's zygotes. A forked child's are its own ([`crate::per_process`]): it never
/// uses, kills or reaps its parent's (their control sockets were already closed in the child,
/// see [`CONTROL_FDS`]).
fn registry() -> MutexGuard<'static, Zygotes> {
    REGISTRY.lock(|| {})
}

/// The control sockets of this process's zygotes, where a `fork` handler can find them without
/// a lock: a child forked from the agent (without `exec`, which closes them anyway) must not
/// hold them, or the agent's zygotes, and the runs in flight through them, would outlive the
/// agent as long as that child lives. Beyond this many zygotes (helper binaries) a forked
/// child keeps the extra ones open.
static CONTROL_FDS: [AtomicI32; 32] = [const { AtomicI32::new(-1) }; 32];

fn remember_control(fd: RawFd) {
    for slot in &CONTROL_FDS {
        if slot
            .compare_exchange(-1, fd, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// Before the descriptor closes, so that a fork in between never closes a reused number.
fn forget_control(fd: RawFd) {
    for slot in &CONTROL_FDS {
        if slot
            .compare_exchange(fd, -1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// In a forked child: closes the parent's control sockets (`close` only: async-signal-safe).
extern "C" fn close_controls_in_child() {
    for slot in &CONTROL_FDS {
        let fd = slot.swap(-1, Ordering::AcqRel);
        if fd >= 0 {
            // SAFETY: closing the child's copy of a descriptor the parent registered.
            unsafe { libc::close(fd) };
        }
    }
}

fn close_controls_at_fork() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a handler that only closes descriptors.
    ONCE.call_once(|| unsafe {
        libc::pthread_atfork(None, None, Some(close_controls_in_child));
    });
}

impl Zygote {
    fn alive(&self) -> bool {
        let mut p = libc::pollfd {
            fd: self.pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        unsafe { libc::poll(&mut p, 1, 0) == 0 }
    }

    /// Whether the calling thread entered a Landlock domain since this zygote started (one the
    /// zygote, and so its commands, are not inside). The kernel tells no process its domain,
    /// but Landlock lets a thread inspect (`ptrace` read access, [`Inspect`]) only a process
    /// inside its own domain: a zygote the agent could inspect at its start and no longer can
    /// is outside. Another cause of the same refusal (the agent dropped `CAP_SYS_PTRACE` or
    /// permitted capabilities the zygote holds, or a new seccomp filter refuses the call)
    /// needs a new zygote as well.
    fn outside_the_callers_domain(&self) -> bool {
        self.domain_check
            .is_some_and(|check| !check.allows(self.pid))
    }

    /// Ends and reaps it, through the pidfd (never a reused pid). Only for a zygote of this
    /// process, by whoever took it out of the registry. The control socket is shut down first:
    /// the zygote then ends by itself, even where the signal is not allowed (an agent that
    /// dropped root may not signal the zygote it started as root).
    fn bury(&self) {
        // SAFETY: shutting down our own socket.
        unsafe { libc::shutdown(self.control.as_raw_fd(), libc::SHUT_RDWR) };
        kill(self.pidfd.as_fd());
        let mut p = libc::pollfd {
            fd: self.pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a zygote that does not end within the bound is left to
        // end later (unreaped) rather than block the caller.
        if unsafe { libc::poll(&mut p, 1, 5000) } <= 0 {
            return;
        }
        self.reap();
    }

    /// Tells it to end once the runs it received are over ([`RETIRE`]); it then gets no new
    /// run. Its control socket stays open until it is reaped, so that the agent's end still
    /// ends those runs.
    fn retire(&self) {
        self.retired.store(true, Ordering::Release);
        // A zygote that is gone already has nothing to end.
        let _ = crate::fdpass::send_msg(self.control.as_fd(), RETIRE, &[]);
    }

    /// Reaps it once it has ended (never blocks).
    fn reap(&self) {
        // SAFETY: an all-zero siginfo is valid; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: reaping our child, which has ended, through its pidfd.
        unsafe {
            libc::waitid(
                libc::P_PIDFD,
                self.pidfd.as_raw_fd() as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG,
            )
        };
    }
}

/// What to do about an error that says the agent ran out of something, for a message; empty
/// for any other.
fn out_of(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE) => {
            " (the agent is out of file descriptors: raise its RLIMIT_NOFILE)"
        }
        Some(libc::EAGAIN | libc::ENOMEM) => " (the agent is out of processes or memory)",
        _ => "",
    }
}

/// Sends SIGKILL through a pidfd (never to a reused pid).
pub(super) fn kill(pidfd: BorrowedFd<'_>) {
    // SAFETY: pidfd_send_signal with a null siginfo.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0u32,
        )
    };
}

/// Kills a run's process group through G's pidfd (see [`super`]), again until the kernel finds
/// no member (a fork racing the kill can add one), for at most [`KILL_RUN_LIMIT`]: members
/// that are dead but not yet reaped by their new parent still count, and the caller must not
/// block on them. Used when the zygote cannot (it died during the run) and as the caller's
/// backstop.
pub(crate) fn kill_run(leader: BorrowedFd<'_>) {
    let give_up = std::time::Instant::now() + KILL_RUN_LIMIT;
    while kill_group(leader, None) == Group::Signalled && std::time::Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// How long [`kill_run`] repeats its kill while the group has members.
const KILL_RUN_LIMIT: Duration = Duration::from_millis(200);

/// The live zygote for `helper` and what its run's G must apply to start as the agent is now
/// (`agent`), started when there is none, it died, or the agent's [`Standing`] changed since
/// it started (the old one is ended), or its umask, limits or cgroups no longer fit
/// ([`Fit::NewZygote`]: the old one is retired, its runs go on).
fn current(
    helper: &Path,
    under: &RunsUnder,
    agent: &Inheritance,
    origin: Origin,
) -> Result<(Arc<Zygote>, crate::request::Inherited), RunError> {
    let key: Key = (helper.to_path_buf(), under.clone());
    let mut reg = registry();
    reg.retired.retain(|z| {
        let alive = z.alive();
        if !alive {
            z.reap();
        }
        alive
    });
    if let Some(z) = reg.live.get(&key) {
        if z.alive() && z.started_as == Standing::now() {
            let fit = if z.outside_the_callers_domain() || agent.confinement_unseen() {
                Fit::NewZygote
            } else {
                agent.fit(z.holds.as_ref())
            };
            if let Fit::Carry(inherited) = fit {
                return Ok((z.clone(), inherited));
            }
            let old = reg.live.remove(&key).expect("present");
            old.retire();
            reg.retired.push(old);
        } else {
            let dead = reg.live.remove(&key).expect("present");
            dead.bury();
        }
    }
    // Another thread that changes the agent's umask, limits or cgroups while a zygote starts
    // leaves it unknown what that one holds: it is not used.
    for _ in 0..3 {
        let z = Arc::new(start(helper, under, origin).map_err(|e| {
            RunError::Helper(format!(
                "starting the sandbox helper {}: {e}{}",
                helper.display(),
                out_of(&e)
            ))
        })?);
        let fit = match &z.holds {
            Some(holds) => agent.children_started_by(holds).fit(Some(holds)),
            None => Fit::NewZygote,
        };
        if let Fit::Carry(inherited) = fit {
            reg.live.insert(key, z.clone());
            return Ok((z, inherited));
        }
        z.bury();
    }
    Err(RunError::Helper(
        "the agent's umask, resource limits or cgroups changed during each of 3 starts of its \
         sandbox helper, so what the helper's commands would inherit is unknown; nothing ran"
            .into(),
    ))
}

/// Forgets `z` and reaps it, when it is still the registered one (otherwise whoever took it
/// out did).
fn forget(helper: &Path, under: &RunsUnder, z: &Arc<Zygote>) {
    let key: Key = (helper.to_path_buf(), under.clone());
    let mut reg = registry();
    if reg.live.get(&key).is_some_and(|r| Arc::ptr_eq(r, z)) {
        reg.live.remove(&key);
        drop(reg);
        z.bury();
    }
}

/// Starts `helper SUBCOMMAND` with its control socket on [`CONTROL_FD`] (or, for
/// [`Origin::Fork`] from a process of one thread, a fork of this process that serves the
/// same), and sends it the seccomp program to run under ([`PROGRAM`]) when there is one, then
/// the tail to hold for its commands ([`TAIL`]) when there is one.
fn start(helper: &Path, under: &RunsUnder, origin: Origin) -> std::io::Result<Zygote> {
    close_controls_at_fork();
    let before = Inheritance::now();
    let (ours, theirs) = crate::fdpass::socketpair(libc::SOCK_SEQPACKET)?;
    remember_control(ours.as_raw_fd());
    let theirs = crate::spawn::high(theirs)?;
    let null = crate::spawn::high(OwnedFd::from(
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")?,
    ))?;
    let pid = match origin {
        Origin::Fork if fork_fits() => fork_serving(&theirs, &null)?,
        _ => {
            let mut fa = FileActions::new();
            for target in 0..3 {
                fa.dup2(null.as_raw_fd(), target)?;
            }
            fa.dup2(theirs.as_raw_fd(), CONTROL_FD)?;
            crate::spawn::spawn_helper(helper, crate::trampoline::SUBCOMMAND, &fa)?
        }
    };
    drop((theirs, null));
    // SAFETY: pidfd_open on our child.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    if pidfd < 0 {
        let e = errno();
        // SAFETY: signalling and reaping our child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        return Err(std::io::Error::other(format!(
            "pidfd_open on the sandbox helper: {e} (the hardened profile needs Linux 5.3 or later)"
        )));
    }
    let z = Zygote {
        pid,
        // SAFETY: a new descriptor, owned here.
        pidfd: unsafe { OwnedFd::from_raw_fd(pidfd) },
        control: ours,
        started_as: Standing::now(),
        holds: Inheritance::of_new_zygote(before),
        retired: AtomicBool::new(false),
        started: std::time::Instant::now(),
        domain_check: Inspect::first_allowed(pid),
    };
    // A zygote that cannot take either (gone, or refused by the kernel) serves runs whose
    // commands install the whole program, or the tail, themselves.
    for (kind, words) in [(PROGRAM, &under.program), (TAIL, &under.tail)] {
        if words.is_empty() || under.program.is_empty() {
            continue;
        }
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let _ = crate::fdpass::send_msg(z.control.as_fd(), &[&kind[..], &bytes].concat(), &[]);
    }
    Ok(z)
}

/// How a new zygote comes to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// `posix_spawn` of the helper binary: a fresh process, whatever the agent's size and
    /// threads. An agent of many runs pays its start (the binary's loading and relocation,
    /// about 1.6 plain spawns of CPU) once.
    Exec,
    /// A `fork` of the calling process, which serves as the helper binary would
    /// ([`crate::zygote::serve`]), when the process has one thread and little resident memory
    /// ([`fork_fits`]); otherwise as [`Origin::Exec`].
    /// For a process of one run ([`crate::runner::RunOptions::one_shot`]), which would pay
    /// the binary's start for that run alone: a small single-threaded process forks in a
    /// fraction of it. A fork of a process of several threads could inherit a lock another
    /// thread held, so it is never made; nor for a long-lived agent, whose memory (and
    /// whatever secrets it holds) the zygote would keep a copy of for its whole life. The copy
    /// is out of the commands' reach as the exec'd zygote's memory is: Landlock refuses a
    /// command ptrace access to its zygote, outside its domain, and the filter refuses
    /// `process_vm_readv` and ptrace.
    Fork,
}

/// The resident memory above which a fork would cost what the exec of the helper saves: the
/// kernel copies the page tables of everything resident, and the caller's next writes fault
/// (a fork from a parent with 256 MiB touched costs about 11 ms, the helper's start about 1).
const FORK_MAX_RESIDENT: u64 = 16 << 20;

/// Whether this process may fork its zygote ([`Origin::Fork`]): it has one thread and at most
/// [`FORK_MAX_RESIDENT`] resident (`/proc/self/stat`; `false` when it cannot be read). Only
/// this thread could start another, so the answer holds until it does.
fn fork_fits() -> bool {
    // SAFETY: sysconf reads a constant.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(0);
    std::fs::read("/proc/self/stat").is_ok_and(|stat| fork_fits_stat(&stat, page))
}

/// [`fork_fits`] for the text of a `/proc/PID/stat` and the page size.
fn fork_fits_stat(stat: &[u8], page: u64) -> bool {
    // After the command name's closing parenthesis (the name may hold any byte): the state is
    // the first field, the number of threads the eighteenth, the resident pages the
    // twenty-second.
    let Some(end) = stat.iter().rposition(|&b| b == b')') else {
        return false;
    };
    let fields: Vec<&[u8]> = stat[end + 1..]
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .collect();
    let number =
        |i: usize| -> Option<u64> { std::str::from_utf8(fields.get(i)?).ok()?.parse().ok() };
    number(17) == Some(1)
        && number(21)
            .and_then(|pages| pages.checked_mul(page))
            .is_some_and(|bytes| bytes <= FORK_MAX_RESIDENT)
}

/// Forks this process (of one thread) into a zygote: `null` on 0-2 and `control` on
/// [`CONTROL_FD`], as [`crate::spawn::spawn_helper`] would start the helper binary, then
/// [`crate::zygote::serve`]. The child never returns into the caller's code: a panic in it
/// ends it, as does any return.
fn fork_serving(control: &OwnedFd, null: &OwnedFd) -> std::io::Result<libc::pid_t> {
    // Every signal blocked across the fork, as posix_spawn does: a signal the child took
    // before it dropped the caller's handlers would run the caller's code in it.
    // SAFETY: signal sets on the stack, and this thread's own mask.
    let mut blocked: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut caller: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe {
        libc::sigfillset(&mut blocked);
        libc::pthread_sigmask(libc::SIG_SETMASK, &blocked, &mut caller);
    }
    // SAFETY: one thread, so nothing another thread held is inherited locked; the child only
    // moves descriptors and then serves, ending with `_exit`.
    let pid = unsafe { libc::fork() };
    if pid != 0 {
        // SAFETY: the caller's own mask back.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &caller, std::ptr::null_mut()) };
    }
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        // Said as what it is: no helper binary was started.
        return Err(std::io::Error::new(
            e.kind(),
            format!(
                "forking this process as its zygote (a one-shot run): {e}{}",
                out_of(&e)
            ),
        ));
    }
    if pid > 0 {
        return Ok(pid);
    }
    // As the helper's execve would: the caller's handlers gone, its ignored signals kept.
    crate::nsclone::drop_handlers();
    // SAFETY: the child's own descriptors and signal mask.
    unsafe {
        for target in 0..3 {
            libc::dup2(null.as_raw_fd(), target);
        }
        libc::dup2(control.as_raw_fd(), CONTROL_FD);
        // As posix_spawn's attributes give the exec'd helper: nothing blocked.
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    }
    // The caller's panic hook is the caller's code too (a crash reporter, say): a panic in the
    // child must not run it. The hook is per process, so this one is the child's alone.
    std::panic::set_hook(Box::new(|_| {}));
    let _ = std::panic::catch_unwind(|| crate::zygote::serve());
    // SAFETY: ends the child without running the caller's exit handlers.
    unsafe { libc::_exit(crate::child::REFUSED_EXIT) }
}

/// Ends every zygote this process started and waits until each is gone; the next hardened run
/// starts a new one. [`crate::confine::confine_self`] calls it first, so that no unconfined
/// zygote outlives the confinement. Runs in flight through them fail (each one's client kills
/// its command's process group when its zygote is gone).
pub fn shut_down() {
    let zygotes: Vec<Arc<Zygote>> = {
        let mut reg = registry();
        let live: Vec<Arc<Zygote>> = reg.live.drain().map(|(_, z)| z).collect();
        live.into_iter().chain(reg.retired.drain(..)).collect()
    };
    for z in zygotes {
        z.bury();
    }
}

/// The pid of the zygote this process uses for `helper`, if one is running (for tests and
/// diagnostics).
pub fn running(helper: &Path) -> Option<u32> {
    registry()
        .live
        .iter()
        .filter(|((h, _), z)| h == helper && z.alive())
        .max_by_key(|(_, z)| z.started)
        .map(|(_, z)| z.pid as u32)
}

/// Starts one hardened run through the zygote for `helper`. G sends its own pidfd before it
/// does anything else, so a zygote that ends before that pidfd arrives started nothing: the
/// run is then retried once on a new zygote.
///
/// `ruleset` goes with the run's message when the request names one
/// ([`crate::request::Request::ruleset_fd`]).
pub(crate) fn spawn(
    helper: &Path,
    origin: Origin,
    stdio: Stdio,
    request: &mut crate::request::Request,
    ruleset: Option<BorrowedFd<'_>>,
) -> Result<Running, RunError> {
    let agent = Inheritance::now();
    // The hardened filter's shared part: the zygote for it runs under it, and its commands
    // inherit it ([`crate::seccomp::Filters::tail`]). The zygote holds it, so the request
    // leaves it out (about 150 numbers less to encode and parse per run).
    // Only a split filter has a shared part a zygote can hold; a whole one stays in the
    // request (and its zygote runs unfiltered).
    let under = if request.filters.tail.is_empty() {
        RunsUnder::default()
    } else {
        RunsUnder {
            program: std::mem::take(&mut request.filters.program),
            // The zygote holds the tail too, sealed with its own secret, so that no command's
            // process loads one, and the request leaves it out: unless the run needs a
            // listener, which is one per run.
            tail: if request.exec_notify {
                Vec::new()
            } else {
                std::mem::take(&mut request.filters.tail)
            },
        }
    };
    for _ in 0..2 {
        let (z, inherited) = current(helper, &under, &agent, origin)?;
        request.parent_pid = z.pid;
        request.inherited = inherited;
        let bytes = serde_json::to_vec(&*request)
            .map_err(|e| RunError::Refused(format!("encoding the spawn request: {e}")))?;
        match try_spawn(&z, stdio, RUN, &bytes, ruleset)? {
            Some(running) => return Ok(running),
            None => forget(helper, &under, &z),
        }
    }
    Err(RunError::Helper(format!(
        "the sandbox helper {} ended twice before starting the run, nothing ran: is it the \
         `policy-sandbox` of this version?",
        helper.display()
    )))
}

/// `Ok(None)`: the zygote is gone and nothing started. `kind`: [`RUN`] or [`FLOOR`].
fn try_spawn(
    z: &Zygote,
    stdio: Stdio,
    kind: &[u8; 4],
    bytes: &[u8],
    ruleset: Option<BorrowedFd<'_>>,
) -> Result<Option<Running>, RunError> {
    let refuse =
        |what: &str, e: std::io::Error| RunError::Refused(format!("{what}: {e}{}", out_of(&e)));
    let streams = Streams::new(stdio).map_err(|e| refuse("capturing output", e))?;
    // A request that fits travels in the run's message; a larger one on a pipe of its own.
    let inline = kind == RUN && bytes.len() <= INLINE_MAX;
    let (req_r, req_w) = if inline {
        (None, None)
    } else {
        let (r, w) = crate::spawn::pipe().map_err(|e| refuse("request pipe", e))?;
        (Some(r), Some(w))
    };
    let (report, theirs) = crate::fdpass::socketpair(libc::SOCK_SEQPACKET)
        .map_err(|e| refuse("the run's socket", e))?;
    let inherited;
    let stdio_fds: [BorrowedFd<'_>; 3] = match &streams.child {
        Some([i, o, e]) => [i.as_fd(), o.as_fd(), e.as_fd()],
        None => {
            inherited = inherit_stdio().map_err(|e| refuse("the caller's standard streams", e))?;
            [
                inherited[0].as_fd(),
                inherited[1].as_fd(),
                inherited[2].as_fd(),
            ]
        }
    };
    let mut fds = stdio_fds.to_vec();
    fds.extend(req_r.as_ref().map(|r| r.as_fd()));
    fds.push(theirs.as_fd());
    fds.extend(ruleset);
    let sent = if inline {
        crate::fdpass::send_msg(z.control.as_fd(), &[&RUN_INLINE[..], bytes].concat(), &fds)
    } else {
        crate::fdpass::send_msg(z.control.as_fd(), kind, &fds)
    };
    drop(fds);
    drop((req_r, theirs, streams.child));
    if let Err(e) = sent {
        if !z.alive() || matches!(e.raw_os_error(), Some(libc::EPIPE | libc::ECONNRESET)) {
            return Ok(None);
        }
        return Err(refuse("sending the run to the sandbox helper", e));
    }
    // Z reads the request as it comes, and starts G only once it has all of it.
    let written = match req_w {
        Some(w) => std::fs::File::from(w).write_all(bytes),
        None => Ok(()),
    };
    let leader = match wait_started(report.as_fd()) {
        Ok(t) => t,
        // Z refused the request before starting G, or G refused before it sent its pidfd:
        // the reason is the run's first message.
        Err(Unstarted::Said(records)) => {
            return Err(refusal(&records).unwrap_or_else(|| {
                RunError::Helper(format!(
                    "the sandbox helper (zygote, pid {}) did not start the run, nothing ran: \
                     it said {:?}",
                    z.pid,
                    String::from_utf8_lossy(&records)
                ))
            }))
        }
        Err(Unstarted::Failed(_)) if !z.alive() => return Ok(None),
        Err(Unstarted::Failed(e)) => {
            // A retired Z may end before it reads a run sent to it meanwhile; no pidfd came,
            // so nothing ran.
            if z.retired.load(Ordering::Acquire) {
                return Ok(None);
            }
            if let Err(w) = written {
                return Err(refuse("sending the spawn request", w));
            }
            return Err(RunError::Helper(format!(
                "the sandbox helper (zygote, pid {}) did not start the run, nothing ran: {e}",
                z.pid
            )));
        }
    };
    Ok(Some(Running {
        waited: Waited::Zygote {
            leader,
            report,
            records: Vec::new(),
        },
        supervisor: Supervisor::Zygote,
        stdout_r: streams.stdout_r,
        stderr_r: streams.stderr_r,
    }))
}

/// The refusal among a run's status records (JSON lines): Z's, of a run it did not start, or
/// G's, before it sent its pidfd.
fn refusal(records: &[u8]) -> Option<RunError> {
    String::from_utf8_lossy(records)
        .lines()
        .find_map(|l| match serde_json::from_str(l) {
            Ok(crate::request::Status::Refused(why)) => Some(RunError::Refused(why)),
            Ok(crate::request::Status::SetUp(refusal)) => Some(RunError::SetUp(refusal)),
            _ => None,
        })
}

/// Why no pidfd came ([`wait_started`]).
enum Unstarted {
    /// The run's first message was a status record: a refusal.
    Said(Vec<u8>),
    /// The socket ended, timed out or failed.
    Failed(std::io::Error),
}

/// Waits (bounded) for G's pidfd on the run's socket.
fn wait_started(report: BorrowedFd<'_>) -> Result<OwnedFd, Unstarted> {
    let mut p = libc::pollfd {
        fd: report.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, START_TIMEOUT.as_millis() as i32) };
        if n > 0 {
            return match read_report(report) {
                Report::Started(pidfd) => Ok(pidfd),
                Report::Record(record) => Err(Unstarted::Said(record)),
                Report::Ended { .. } | Report::Lost => Err(Unstarted::Failed(
                    std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
                )),
            };
        }
        if n == 0 {
            return Err(Unstarted::Failed(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer within {START_TIMEOUT:?}"),
            )));
        }
        if errno().kind() != std::io::ErrorKind::Interrupted {
            return Err(Unstarted::Failed(errno()));
        }
    }
}

/// The caller's 0-2 for [`Stdio::Inherit`] (/dev/null in place of a closed one).
fn inherit_stdio() -> std::io::Result<[OwnedFd; 3]> {
    let one = |fd: RawFd| -> std::io::Result<OwnedFd> {
        // SAFETY: duplicating a descriptor number; a closed one fails with EBADF.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup >= 0 {
            // SAFETY: a new descriptor, owned here.
            return Ok(unsafe { OwnedFd::from_raw_fd(dup) });
        }
        Ok(OwnedFd::from(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")?,
        ))
    };
    Ok([one(0)?, one(1)?, one(2)?])
}

/// One message of a run's socket ([`read_report`]).
pub(crate) enum Report {
    /// G's pidfd, the run's first message once G started.
    Started(OwnedFd),
    /// A status record (a JSON line): Z's refusal before G, or G's before its `execve`.
    Record(Vec<u8>),
    /// Z's report of G's end: G's wait status, the CPU time of G, of the run's orphans and Z's
    /// own for the run, whether every process of the run was gone, and the run's final status
    /// record.
    Ended {
        status: i32,
        cpu: Duration,
        drained: bool,
        record: Vec<u8>,
    },
    /// The socket ended without Z's report (Z died), or failed.
    Lost,
}

/// Reads the next message of a run's socket, waiting for it.
pub(crate) fn read_report(report: BorrowedFd<'_>) -> Report {
    let mut payload = [0u8; MAX_RECORD];
    let (n, mut fds) = loop {
        match crate::fdpass::recv_msg(report, &mut payload, 1) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A message cut short (a record longer than `MAX_RECORD`, or more descriptors than
            // one): only a failure sends a record before Z's end report, so it stands for one.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                let said = crate::request::Status::Refused(format!(
                    "the sandbox helper's report of the run was cut short ({e}): it refused \
                     the run, for a reason longer than {MAX_RECORD} bytes"
                ));
                let mut record = serde_json::to_vec(&said).unwrap_or_default();
                record.push(b'\n');
                return Report::Record(record);
            }
            Err(_) => return Report::Lost,
            Ok(received) => break received,
        }
    };
    let message = &payload[..n];
    if let Some(fd) = fds.pop() {
        return match crate::fdpass::is_one_fd_header(message) {
            true => Report::Started(fd),
            false => Report::Lost,
        };
    }
    if n == 0 {
        return Report::Lost;
    }
    if n < ENDED_LEN || &message[..4] != ENDED {
        return Report::Record(message.to_vec());
    }
    let word = |at: usize| u64::from_le_bytes(message[at..at + 8].try_into().expect("8 bytes"));
    Report::Ended {
        status: i32::from_le_bytes(message[4..8].try_into().expect("4 bytes")),
        cpu: Duration::from_nanos(word(8)) + Duration::from_nanos(word(16)),
        drained: message[24] == 1,
        record: message[ENDED_LEN..].to_vec(),
    }
}

/// The floor of a hardened run's helper side, for the spawn bench: one run without a request,
/// whose G refuses at once after its start. It costs the run's channels, the zygote's start of
/// G, G's pidfd and end, the group kill and the zygote's report, and no command. Returns the helper CPU time
/// the zygote reported (the caller's own is the caller's to measure).
///
/// # Errors
///
/// The helper could not be started, or the round trip did not end in G's refusal.
#[doc(hidden)]
pub fn floor_round_trip(helper: &Path) -> Result<Duration, RunError> {
    let (z, _) = current(
        helper,
        &RunsUnder::default(),
        &Inheritance::now(),
        Origin::Exec,
    )?;
    let running = try_spawn(&z, Stdio::Capture, FLOOR, b"", None)?
        .ok_or_else(|| RunError::Helper("the zygote ended".into()))?;
    let collected = running.collect(None, None);
    let refused = collected
        .statuses
        .iter()
        .any(|s| matches!(s, crate::request::Status::SetUp(_)));
    match collected.helper_cpu {
        Some(cpu) if refused => Ok(cpu),
        _ => Err(RunError::Helper(format!(
            "the empty request was not refused: {:?}",
            collected.statuses
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each message of a run's socket reads as what it is: G's pidfd, a status record (a
    /// refusal in place of one too long to read whole), Z's end report with the final record,
    /// and the end of the socket.
    #[test]
    fn a_runs_socket_brings_the_pidfd_records_and_the_end_report() {
        let (z, agent) = crate::fdpass::socketpair(libc::SOCK_SEQPACKET).unwrap();
        let send = |bytes: &[u8]| {
            // SAFETY: sending a live buffer on our socket.
            let n = unsafe { libc::send(z.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), 0) };
            assert_eq!(n, bytes.len() as isize);
        };
        let (pipe_r, _pipe_w) = crate::spawn::pipe().unwrap();
        crate::fdpass::send_one(z.as_fd(), pipe_r.as_fd()).unwrap();
        assert!(matches!(read_report(agent.as_fd()), Report::Started(_)));
        send(b"{\"refused\":\"no\"}\n");
        match read_report(agent.as_fd()) {
            Report::Record(r) => {
                assert!(matches!(refusal(&r), Some(RunError::Refused(w)) if w == "no"))
            }
            _ => panic!("a record"),
        }
        let long = format!("{{\"refused\":\"{}\"}}\n", "x".repeat(MAX_RECORD));
        send(long.as_bytes());
        match read_report(agent.as_fd()) {
            Report::Record(r) => assert!(
                matches!(refusal(&r), Some(RunError::Refused(w)) if w.contains("cut short")),
                "{}",
                String::from_utf8_lossy(&r)
            ),
            _ => panic!("a record standing for the one cut short"),
        }
        let mut end = ENDED.to_vec();
        end.extend_from_slice(&7i32.to_le_bytes());
        end.extend_from_slice(&1_000u64.to_le_bytes());
        end.extend_from_slice(&2_000u64.to_le_bytes());
        end.push(1);
        end.extend_from_slice(b"{\"exited\":{\"code\":0}}\n");
        send(&end);
        match read_report(agent.as_fd()) {
            Report::Ended {
                status,
                cpu,
                drained,
                record,
            } => {
                assert_eq!(
                    (status, cpu, drained),
                    (7, Duration::from_nanos(3_000), true)
                );
                assert_eq!(record, b"{\"exited\":{\"code\":0}}\n");
            }
            _ => panic!("the end report"),
        }
        drop(z);
        assert!(matches!(read_report(agent.as_fd()), Report::Lost));
    }

    /// A `/proc/PID/stat` line with `threads` and `rss` pages, and a command name that holds
    /// the separators a naive parser would split on.
    fn stat(threads: u64, rss: u64) -> Vec<u8> {
        format!(
            "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 {threads} 0 \
             12345 10000000 {rss} 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 1 0 0 0 0 0"
        )
        .into_bytes()
    }

    #[test]
    fn only_a_small_process_of_one_thread_forks_its_zygote() {
        let page = 4096;
        assert!(fork_fits_stat(&stat(1, 1500), page), "6 MB, one thread");
        assert!(fork_fits_stat(&stat(1, 4096), page), "16 MiB exactly");
        assert!(!fork_fits_stat(&stat(1, 4097), page), "above 16 MiB");
        assert!(!fork_fits_stat(&stat(2, 1500), page), "two threads");
        assert!(!fork_fits_stat(b"4242 (truncated", page));
        assert!(!fork_fits_stat(b"", page));
        assert!(!fork_fits_stat(&stat(1, u64::MAX), page), "overflow");
        // This process, read for real: the test harness runs its tests on threads of their own.
        assert!(!fork_fits());
    }
}
