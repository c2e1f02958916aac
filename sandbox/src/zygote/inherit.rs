//! What a command inherits from the process that starts it and the agent may change between runs:
//! its umask, its resource limits, its scheduling policy, nice value, CPU affinity and I/O
//! priority, its timer slack, its OOM score adjustment, its personality, its cgroups, the flags an
//! `execve` keeps (transparent huge pages disabled, memory merging, the core dump filter,
//! speculation mitigations, NUMA memory policy), its session and audit session, and what confines
//! it (seccomp filters, namespaces, root directory).
//!
//! A strict run's child is cloned from the agent's calling thread at the time of the run, so it has
//! the agent's values of that moment. A hardened command is forked from the zygote, which has the
//! agent's values of the time it started. So the client takes the agent's values at each run
//! ([`Inheritance::now`]: 16 `getrlimit`, `sched_getscheduler`, `getpriority`, `sched_getaffinity`,
//! `ioprio_get`, `personality`, `PR_GET_TIMERSLACK`, `PR_GET_MDWE`, `PR_GET_THP_DISABLE`,
//! `PR_GET_MEMORY_MERGE`, two `PR_GET_SPECULATION_CTRL`, `get_mempolicy`, `getsid`, a `statx` of
//! `/`, two `readlinkat` of the thread's `/proc` namespace links and one read of each of its
//! `status`, `cgroup`, `oom_score_adj` and `sessionid` files and of the process's
//! `coredump_filter`, all kept open: 26 to 45 µs of the agent's CPU per run, by machine, which
//! `inheritance_cost`, an ignored test run with `--release`, prints with some of its parts) and
//! compares them with what its zygote holds ([`Inheritance::of_new_zygote`]):
//! * a different umask, scheduling policy, CPU affinity, I/O priority, timer slack or personality,
//!   a higher nice value or OOM score adjustment, or soft or hard limits the zygote's G can reach
//!   by lowering, travel with the run ([`crate::request::Inherited`]) and G applies them (all but
//!   the limits at its start, the limits just before the policy's own, [`crate::child`]);
//! * another confinement (a seccomp filter added, another mount namespace, root directory, network
//!   namespace or pid namespace for children, memory-deny-write-execute: [`Confinement`]), another
//!   cgroup (the agent moved itself), other flags that an `execve` keeps ([`KeptFlags`]), another
//!   session (the agent called `setsid`) or audit session (it set its login uid), a hard limit the
//!   agent raised above the zygote's, a nice value or OOM score adjustment it lowered below the
//!   zygote's, or a policy or I/O priority G could only take with a privilege (leaving
//!   `SCHED_IDLE`, taking a real-time policy or a higher real-time priority than the zygote's, the
//!   real-time I/O class) needs a zygote that has them, since G may hold no privilege by then: the
//!   old one is retired (it serves the runs in flight, then ends) and a new one starts, once per
//!   change. Moving G into the agent's cgroups on every run would cost a cgroup migration per run
//!   instead.
//!
//! The values taken are those a child forked from the calling thread would start with, which is
//! what a strict run's `clone` gives its child: under `SCHED_RESET_ON_FORK` a real-time or deadline
//! policy becomes `SCHED_OTHER` and a negative nice value 0 (the kernel's `sched_fork`). A thread
//! under `SCHED_DEADLINE` without that flag cannot fork at all (`EAGAIN`): its hardened runs are
//! refused at the scheduling step, as its strict runs and plain spawns fail.
//!
//! Not compared, each for its reason: the UTS, cgroup and time namespaces the agent may give its
//! children (they change what a command reads, its host name, cgroup paths and clocks, not
//! what it may reach, and each would cost a `readlinkat` per run); the IPC namespace (the
//! hardened command may use neither System V IPC nor message queues); ignored signals and the
//! signal mask (both profiles start the command with neither); a timestamp counter the thread
//! disabled (`PR_SET_TSC`), which a thread cannot hold and still read the clock where the
//! kernel's clock source is the TSC: the run's own first clock read faults.

use std::os::fd::{AsRawFd, RawFd};

use crate::request::Inherited;

/// The resource limits a process passes to its children (Linux's `RLIMIT_*`, all of them).
const RESOURCES: [libc::__rlimit_resource_t; 16] = [
    libc::RLIMIT_CPU,
    libc::RLIMIT_FSIZE,
    libc::RLIMIT_DATA,
    libc::RLIMIT_STACK,
    libc::RLIMIT_CORE,
    libc::RLIMIT_RSS,
    libc::RLIMIT_NPROC,
    libc::RLIMIT_NOFILE,
    libc::RLIMIT_MEMLOCK,
    libc::RLIMIT_AS,
    libc::RLIMIT_LOCKS,
    libc::RLIMIT_SIGPENDING,
    libc::RLIMIT_MSGQUEUE,
    libc::RLIMIT_NICE,
    libc::RLIMIT_RTPRIO,
    libc::RLIMIT_RTTIME,
];

/// The calling thread's umask, resource limits (soft, hard) and cgroups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Inheritance {
    umask: u32,
    limits: [(u64, u64); RESOURCES.len()],
    /// The text of `/proc/thread-self/cgroup`; `None` when it cannot be read (an agent
    /// confined without read access to `/proc`, which then cannot move itself either unless
    /// its policy lets it write to the cgroup file system).
    cgroups: Option<Vec<u8>>,
    /// The thread's nice value (Linux keeps one per thread); `None` when it cannot be read
    /// (then the zygote's stands, as for the affinity).
    nice: Option<i32>,
    /// The thread's scheduling policy and real-time priority (also per thread); `None` when
    /// they cannot be read (then the zygote's stand).
    policy: Option<(i32, i32)>,
    /// The thread's I/O priority (`ioprio_get`: class and level; also per thread); `None` when
    /// it cannot be read.
    ioprio: Option<i32>,
    /// The process's OOM score adjustment; `None` when it cannot be read (an agent confined
    /// without `/proc`).
    oom_score_adj: Option<i32>,
    /// The process's execution domain and its flags (`personality`, such as
    /// `ADDR_NO_RANDOMIZE` under `setarch -R`).
    personality: Option<i32>,
    /// The thread's timer slack in nanoseconds (`PR_GET_TIMERSLACK`; per thread, and what a
    /// child starts with): how far the kernel may defer its timers to group wake-ups. 0 under a
    /// real-time policy, which has none (a value set then is ignored). G can set the current
    /// value only: the default a `PR_SET_TIMERSLACK(0)` returns to stays the zygote's, which
    /// the kernel fixes when a thread is created.
    timer_slack: Option<u64>,
    /// Flags that its children and the programs they start keep: see [`KeptFlags`].
    kept: KeptFlags,
    /// The thread's CPU affinity, as the words of a `cpu_set_t`; `None` on a host whose CPU
    /// numbers do not fit one (then the zygote's stands).
    affinity: Option<Vec<u64>>,
    /// How far the thread is confined beyond its ids, which a child inherits and cannot leave:
    /// see [`Confinement`].
    confinement: Confinement,
    /// The process's session (`getsid`), which a child stays in and so does the program it
    /// starts: the command's controlling terminal and its hang-up are the session's. An agent
    /// that left its session (`setsid`, a daemon detaching from its terminal) must not have
    /// its commands in the old one. `None` when it cannot be read.
    session: Option<libc::pid_t>,
    /// The process's audit session (`/proc/thread-self/sessionid`), which a child keeps with
    /// its login uid: the `auid` and `ses` the audit log records for what the command does.
    /// Every write of the login uid that changes it starts a new audit session, so this number
    /// alone tells a change of either. `None` on a kernel without audit.
    audit_session: Option<Vec<u8>>,
}

/// What confines a thread's children besides its ids and its Landlock domain (which
/// [`super::client`] compares with the zygote's through the kernel): the number of seccomp
/// filters it runs under, its mount namespace and root directory, the network and pid
/// namespaces its children start in, and its memory-deny-write-execute flags. An agent can
/// only add to them (another filter, `unshare`, `setns`, `chroot`, `PR_SET_MDWE`), and a
/// command from a zygote started before must not escape what it added: any difference needs a
/// new zygote. `None`: unknown (an agent confined without `/proc`), which differs from a known
/// value, so that a change from known to unknown is a change too; and where an unknown value
/// could hide a change ([`Confinement::unseen`]), every run needs a new zygote.
///
/// The other namespaces confine nothing a hardened command could use: it is refused SysV IPC
/// and message queues (seccomp), holds no capability in any user namespace, and the host name
/// (UTS) is no boundary. Each namespace read costs about 1.9 µs (`readlink` of its `/proc`
/// link; `stat`, at 4.7 µs, is dearer), so only these two are read.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Confinement {
    /// `Seccomp_filters` of the thread's `status` (Linux 5.9): a filter added by an agent
    /// already filtered leaves its seccomp mode as it was.
    seccomp_filters: Option<u32>,
    /// The mount and inode of the thread's root directory (`statx` of `/`): a new mount
    /// namespace copies every mount under a new id, and `chroot` or `pivot_root` moves the
    /// root.
    root: Option<(u64, u64, u64)>,
    /// The inode numbers of the network namespace and of the pid namespace for children, from
    /// the thread's `/proc/thread-self/ns` links (`net`, `pid_for_children`).
    namespaces: Option<[u64; 2]>,
    /// The process's memory-deny-write-execute flags (`PR_GET_MDWE`, Linux 6.3): set, they
    /// refuse every mapping that is or becomes both writable and executable, in the process
    /// and the programs it starts, and cannot be unset.
    mdwe: Option<i32>,
    /// Part of it cannot be read (the thread's `/proc` is closed to it, as to an agent that
    /// confined itself without it before its first run) where a change could matter: the
    /// number of filters of a thread under seccomp (one it adds would not be seen), or the
    /// namespaces (one it enters would not be). See [`Inheritance::confinement_unseen`].
    unseen: bool,
}

impl Confinement {
    fn now(status: Option<&str>) -> Confinement {
        let seccomp_filters = status
            .and_then(|s| status_field(s, "Seccomp_filters:"))
            .and_then(|v| v.parse().ok());
        let namespaces = namespaces();
        Confinement {
            seccomp_filters,
            // SAFETY: a query with integer arguments.
            unseen: namespaces.is_none()
                || seccomp_filters.is_none()
                    && unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } == 2,
            root: crate::mounts::thread_root(),
            namespaces,
            mdwe: mdwe(),
        }
    }
}

/// The value of the line of `status` that starts with `name`, trimmed.
fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
}

/// The inode numbers of the calling thread's network namespace and pid namespace for
/// children ([`UNSTARTED`] for the latter when it has no init yet), from the text of their
/// `/proc` links (`net:[4026531840]`), read through descriptors of the links themselves, kept
/// open as the thread's other `/proc` files are: the kernel makes a link's text from the
/// thread's namespace at each read, so the descriptor tells the namespace of now, and spares
/// the lookup of the link's name (1.3 µs a run for the two).
fn namespaces() -> Option<[u64; 2]> {
    let mut ids = [0; 2];
    for (at, (id, link)) in ids
        .iter_mut()
        .zip([ProcFile::NetLink, ProcFile::PidForChildrenLink])
        .enumerate()
    {
        *id = match crate::netns::namespace_inode(c"", Some(link.open()?)) {
            Ok(inode) => inode,
            // The kernel names no pid namespace for children until its first process (its
            // init) exists.
            Err(e) if at == PID_FOR_CHILDREN && e.raw_os_error() == Some(libc::ENOENT) => UNSTARTED,
            Err(_) => return None,
        };
    }
    Some(ids)
}

/// Flags that a forked child keeps and its `execve` carries to the program it starts, as a
/// plain child of the agent would have them, and that an agent may set at any time without a
/// privilege. A difference needs a new zygote (see the module docs), started from the agent as
/// it is then: it has them as the agent's plain children do.
/// * Three of the address space: `PR_SET_THP_DISABLE` (no transparent huge pages, which a
///   latency-sensitive or memory-tight agent sets), `PR_SET_MEMORY_MERGE` (every mapping
///   offered to the kernel's same-page merging, Linux 6.4) and the core dump filter
///   (`/proc/self/coredump_filter`: which mappings a core dump holds, which an agent narrows so
///   that its programs' dumps leave out, say, the files they mapped). G shares Z's address
///   space until its `execve`, so it could not set them for one run without setting them for
///   Z and every run in flight. Memory-deny-write-execute, also of the address space, is
///   compared with the confinement ([`Confinement::mdwe`]).
/// * Two of the thread, the speculation mitigations it asked for (`PR_SET_SPECULATION_CTRL`):
///   speculative store bypass and indirect branch speculation disabled. An agent that turned
///   one off for its thread would otherwise have its commands run without it. As a program
///   started by the thread would have them: one disabled only until the next `execve`
///   (`PR_SPEC_DISABLE_NOEXEC`) counts as enabled, which its programs are.
/// * The thread's NUMA memory policy (`set_mempolicy`, as `numactl --membind` sets it for
///   the program it starts): its mode and nodes.
///
/// Each is `None` when the kernel does not say (then the zygote's stands).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct KeptFlags {
    thp_disable: Option<i32>,
    memory_merge: Option<i32>,
    dump_filter: Option<u32>,
    store_bypass: Option<i32>,
    indirect_branch: Option<i32>,
    numa_policy: Option<(i32, [u64; NODE_WORDS])>,
}

/// The words of a node mask that holds every node the kernel can number (1024, its
/// `MAX_NUMNODES` at the largest `NODES_SHIFT`).
const NODE_WORDS: usize = 16;

/// The calling thread's NUMA memory policy: its mode (with its mode flags) and node mask.
fn numa_policy() -> Option<(i32, [u64; NODE_WORDS])> {
    let (mut mode, mut nodes) = (0 as libc::c_int, [0u64; NODE_WORDS]);
    // SAFETY: get_mempolicy of the thread (no address, no flags) writes the mode and at most
    // `64 * NODE_WORDS` bits of mask, which `nodes` holds.
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            nodes.as_mut_ptr(),
            64 * NODE_WORDS as libc::c_ulong,
            std::ptr::null_mut::<libc::c_void>(),
            0 as libc::c_ulong,
        )
    };
    (r == 0).then_some((mode, nodes))
}

/// `PR_GET_SPECULATION_CTRL`'s features and answer bits (Linux's uapi `prctl.h`; libc has them
/// for some architectures only).
const PR_SPEC_STORE_BYPASS: libc::c_ulong = 0;
const PR_SPEC_INDIRECT_BRANCH: libc::c_ulong = 1;
const PR_SPEC_PRCTL: i32 = 1;
const PR_SPEC_ENABLE: i32 = 1 << 1;
const PR_SPEC_DISABLE_NOEXEC: i32 = 1 << 4;

impl KeptFlags {
    fn now() -> KeptFlags {
        const PR_GET_MEMORY_MERGE: libc::c_int = 68;
        const PR_GET_SPECULATION_CTRL: libc::c_int = 52;
        // SAFETY: queries with integer arguments.
        let get = |option, arg: libc::c_ulong| {
            Some(unsafe { libc::prctl(option, arg, 0, 0, 0) }).filter(|v| *v >= 0)
        };
        let speculation = |feature| {
            get(PR_GET_SPECULATION_CTRL, feature).map(|v| {
                if v & PR_SPEC_DISABLE_NOEXEC != 0 {
                    PR_SPEC_PRCTL | PR_SPEC_ENABLE
                } else {
                    v
                }
            })
        };
        KeptFlags {
            thp_disable: get(libc::PR_GET_THP_DISABLE, 0),
            memory_merge: get(PR_GET_MEMORY_MERGE, 0),
            dump_filter: ProcFile::DumpFilter.read().and_then(|text| {
                u32::from_str_radix(std::str::from_utf8(&text).ok()?.trim(), 16).ok()
            }),
            store_bypass: speculation(PR_SPEC_STORE_BYPASS),
            indirect_branch: speculation(PR_SPEC_INDIRECT_BRANCH),
            numa_policy: numa_policy(),
        }
    }

    /// Whether a process that holds `zygote` would start programs with other flags; an
    /// unknown value on either side leaves the zygote's.
    fn differ(self, zygote: KeptFlags) -> bool {
        changed(self.thp_disable, zygote.thp_disable).is_some()
            || changed(self.memory_merge, zygote.memory_merge).is_some()
            || changed(self.dump_filter, zygote.dump_filter).is_some()
            || changed(self.store_bypass, zygote.store_bypass).is_some()
            || changed(self.indirect_branch, zygote.indirect_branch).is_some()
            || changed(self.numa_policy, zygote.numa_policy).is_some()
    }
}

/// The process's memory-deny-write-execute flags; `None` on a kernel without them.
fn mdwe() -> Option<i32> {
    const PR_GET_MDWE: libc::c_int = 66;
    // SAFETY: a query with integer arguments.
    let flags = unsafe { libc::prctl(PR_GET_MDWE, 0, 0, 0, 0) };
    (flags >= 0).then_some(flags)
}

/// Where [`namespaces`] has the pid namespace for children.
const PID_FOR_CHILDREN: usize = 1;

/// The identity of a pid namespace for children whose init has not started (`unshare` with
/// `CLONE_NEWPID` and no child since): the next process the thread starts is that init.
const UNSTARTED: u64 = 0;

/// What a run must do about the zygote it would go through.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fit {
    /// The zygote serves it; its G applies these.
    Carry(Inherited),
    /// The zygote cannot give the run what the agent has now (see the module docs).
    NewZygote,
}

impl Inheritance {
    /// The calling thread's values (a cloned child, as a strict run's, would get these).
    pub(super) fn now() -> Inheritance {
        let mut limits = [(0, 0); RESOURCES.len()];
        for (slot, &resource) in limits.iter_mut().zip(&RESOURCES) {
            let mut rl = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit fills a valid struct; an unknown resource leaves it zero.
            unsafe { libc::getrlimit(resource, &mut rl) };
            *slot = (rl.rlim_cur, rl.rlim_max);
        }
        let (policy, reset_on_fork) = policy();
        let status = ProcFile::Status.read();
        let status = status.as_deref().and_then(|s| std::str::from_utf8(s).ok());
        Inheritance {
            umask: umask(status),
            limits,
            cgroups: ProcFile::Cgroup.read(),
            nice: nice().map(|n| if reset_on_fork { n.max(0) } else { n }),
            policy,
            ioprio: ioprio(),
            oom_score_adj: ProcFile::OomScoreAdj
                .read()
                .and_then(|text| std::str::from_utf8(&text).ok()?.trim().parse().ok()),
            // SAFETY: the query value (0xffffffff) changes nothing.
            personality: Some(unsafe { libc::personality(0xffff_ffff) }).filter(|p| *p >= 0),
            affinity: affinity(),
            timer_slack: timer_slack(),
            kept: KeptFlags::now(),
            confinement: Confinement::now(status),
            // SAFETY: getsid of the calling process takes an integer.
            session: Some(unsafe { libc::getsid(0) }).filter(|s| *s >= 0),
            audit_session: ProcFile::AuditSession.read(),
        }
    }

    /// What a zygote just started from this thread holds: the values taken before its start
    /// (`before`) when they did not change meanwhile; otherwise (another thread changed one
    /// while it started) `None`, which no run fits, so the next run starts another.
    ///
    /// A zygote started from a thread whose pid namespace for children had no init yet is
    /// that init: it holds the namespace as it is now.
    pub(super) fn of_new_zygote(before: Inheritance) -> Option<Inheritance> {
        let after = Inheritance::now();
        (before.children_started_by(&after) == after).then_some(after)
    }

    /// Whether the thread cannot read all of what confines it (seccomp filters it cannot
    /// count, namespaces it cannot name): then no zygote started before this run can be known
    /// to hold it, and the run needs a new one (each run of such a thread starts one, whose
    /// start alone costs 1.5–1.8 ms of CPU in the spawn bench, against a command outside the
    /// agent's confinement).
    pub(super) fn confinement_unseen(&self) -> bool {
        self.confinement.unseen
    }

    /// These values, with the pid namespace for children that `zygote` (a zygote started from
    /// this thread since) holds when this one's had no init yet, which that zygote became.
    pub(super) fn children_started_by(&self, zygote: &Inheritance) -> Inheritance {
        let mut now = self.clone();
        if let (Some(ids), Some(theirs)) = (
            now.confinement.namespaces.as_mut(),
            zygote.confinement.namespaces.as_ref(),
        ) {
            if ids[PID_FOR_CHILDREN] == UNSTARTED {
                ids[PID_FOR_CHILDREN] = theirs[PID_FOR_CHILDREN];
            }
        }
        now
    }

    /// How a run from an agent with these values fits a zygote that holds `zygote`.
    pub(super) fn fit(&self, zygote: Option<&Inheritance>) -> Fit {
        let Some(zygote) = zygote else {
            return Fit::NewZygote;
        };
        let raised = self
            .limits
            .iter()
            .zip(&zygote.limits)
            .any(|(now, then)| !within(now.1, then.1));
        let lowered = matches!((self.nice, zygote.nice), (Some(now), Some(then)) if now < then);
        let policy = changed(self.policy, zygote.policy);
        let privileged = policy.is_some_and(|now| needs_privilege(now, zygote.policy));
        let ioprio = changed(self.ioprio, zygote.ioprio);
        // The real-time I/O class takes CAP_SYS_NICE or CAP_SYS_ADMIN, which G may lack.
        let realtime_io = ioprio.is_some_and(|p| p >> IOPRIO_CLASS_SHIFT == IOPRIO_CLASS_RT);
        let oom_score_adj = changed(self.oom_score_adj, zygote.oom_score_adj);
        // Below the zygote's takes CAP_SYS_RESOURCE, unless a privileged writer let it down.
        let lowered_oom =
            matches!((oom_score_adj, zygote.oom_score_adj), (Some(now), Some(then)) if now < then);
        if raised
            || lowered
            || privileged
            || realtime_io
            || lowered_oom
            || self.cgroups != zygote.cgroups
            || self.kept.differ(zygote.kept)
            || self.confinement != zygote.confinement
            || self.session != zygote.session
            || self.audit_session != zygote.audit_session
        {
            return Fit::NewZygote;
        }
        let rlimits = RESOURCES
            .iter()
            .zip(self.limits.iter().zip(&zygote.limits))
            .filter(|(_, (now, then))| now != then)
            .map(|(&resource, (&(soft, hard), _))| (resource, soft, hard))
            .collect();
        Fit::Carry(Inherited {
            umask: (self.umask != zygote.umask).then_some(self.umask),
            rlimits,
            nice: self
                .nice
                .filter(|_| zygote.nice.is_some() && self.nice != zygote.nice),
            policy,
            ioprio,
            oom_score_adj,
            personality: changed(self.personality, zygote.personality),
            // 0: a real-time policy, which G takes with the run and which leaves it none.
            timer_slack: changed(self.timer_slack, zygote.timer_slack).filter(|s| *s > 0),
            affinity: self
                .affinity
                .as_ref()
                .filter(|_| self.affinity != zygote.affinity)
                .cloned(),
        })
    }
}

/// The calling thread's nice value. The raw call, because its value (20 - nice, 1 to 40)
/// cannot be mistaken for an error as libc's -1 can.
fn nice() -> Option<i32> {
    // SAFETY: getpriority of the calling thread (who = 0) takes integers.
    let raw = unsafe { libc::syscall(libc::SYS_getpriority, libc::PRIO_PROCESS, 0) };
    (raw > 0).then(|| 20 - raw as i32)
}

/// `now` when it differs from `then` and both are known (an unknown value on either side
/// leaves the zygote's).
fn changed<T: PartialEq>(now: Option<T>, then: Option<T>) -> Option<T> {
    match (now, then) {
        (Some(now), Some(then)) if now != then => Some(now),
        _ => None,
    }
}

/// The calling thread's timer slack. The raw call, whose result is a `long`: libc's `prctl`
/// returns an `int`, which cuts a slack above about 2.1 s.
fn timer_slack() -> Option<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no argument and writes nothing.
    let raw = unsafe { libc::syscall(libc::SYS_prctl, libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    u64::try_from(raw).ok()
}

/// `ioprio` values: the class sits above this bit; the real-time class is 1.
const IOPRIO_CLASS_SHIFT: i32 = 13;
const IOPRIO_CLASS_RT: i32 = 1;

/// The calling thread's I/O priority (`IOPRIO_WHO_PROCESS` with who 0: the calling thread).
fn ioprio() -> Option<i32> {
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    // SAFETY: ioprio_get takes integers.
    let raw = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) };
    (raw >= 0).then_some(raw as i32)
}

/// The scheduling policy and real-time priority a child forked from the calling thread would
/// start with, and whether the thread's `SCHED_RESET_ON_FORK` flag is set (its children then
/// start at nice 0 at most; see the module docs).
fn policy() -> (Option<(i32, i32)>, bool) {
    // SAFETY: sched_getscheduler of the calling thread (pid 0) takes an integer.
    let raw = unsafe { libc::sched_getscheduler(0) };
    if raw < 0 {
        return (None, false);
    }
    let reset_on_fork = raw & libc::SCHED_RESET_ON_FORK != 0;
    let policy = raw & !libc::SCHED_RESET_ON_FORK;
    let realtime = matches!(policy, libc::SCHED_FIFO | libc::SCHED_RR);
    if reset_on_fork && (realtime || policy == libc::SCHED_DEADLINE) {
        return (Some((libc::SCHED_OTHER, 0)), true);
    }
    if !realtime {
        return (Some((policy, 0)), reset_on_fork);
    }
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_getparam of the calling thread fills a valid struct.
    if unsafe { libc::sched_getparam(0, &mut param) } != 0 {
        return (None, reset_on_fork);
    }
    (Some((policy, param.sched_priority)), reset_on_fork)
}

/// Whether a process under the policy `then` (the zygote's; `None`: unknown) may need a
/// privilege (`CAP_SYS_NICE`, or room under `RLIMIT_NICE` or `RLIMIT_RTPRIO`) to take `now`,
/// after the kernel's rules for `sched_setscheduler` without one: `SCHED_IDLE` is left only
/// within `RLIMIT_NICE`, and a real-time policy is taken, or its priority raised, only within
/// `RLIMIT_RTPRIO`. Lowering a real-time priority or leaving real time needs nothing.
/// `SCHED_DEADLINE` is not taken at all, and G refuses it with its reason
/// ([`crate::child`]).
fn needs_privilege(now: (i32, i32), then: Option<(i32, i32)>) -> bool {
    let Some(then) = then else {
        return false;
    };
    let leaves_idle = then.0 == libc::SCHED_IDLE && now.0 != libc::SCHED_IDLE;
    let realtime = matches!(now.0, libc::SCHED_FIFO | libc::SCHED_RR);
    leaves_idle || (realtime && (now.0 != then.0 || now.1 > then.1))
}

/// The calling thread's CPU affinity, as the words of a `cpu_set_t`.
fn affinity() -> Option<Vec<u64>> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set, which the call fills.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // The raw call, which says how many bytes of the set the kernel wrote (its CPU count
    // rounded up to a word): only those CPUs are looked at, not all of CPU_SETSIZE (1024
    // tests cost about a microsecond per run).
    // SAFETY: sched_getaffinity of the calling thread into a set of the size given.
    let written = unsafe {
        libc::syscall(
            libc::SYS_sched_getaffinity,
            0,
            std::mem::size_of_val(&set),
            &mut set as *mut libc::cpu_set_t,
        )
    };
    let written = usize::try_from(written).ok()?;
    let bits = 8 * std::mem::size_of::<u64>();
    let mut words = vec![0u64; libc::CPU_SETSIZE as usize / bits];
    for cpu in 0..(8 * written).min(libc::CPU_SETSIZE as usize) {
        // SAFETY: a CPU number below CPU_SETSIZE, in our own set.
        if unsafe { libc::CPU_ISSET(cpu, &set) } {
            words[cpu / bits] |= 1 << (cpu % bits);
        }
    }
    // Trailing empty words say nothing; without them the request stays short.
    while words.last() == Some(&0) {
        words.pop();
    }
    Some(words)
}

/// Whether limit `now` is at most `then` (`RLIM_INFINITY` is above every number).
fn within(now: u64, then: u64) -> bool {
    then == libc::RLIM_INFINITY || now <= then
}

/// The calling thread's umask, from its `/proc` status (the `umask` call that reads it also
/// sets it, which a parallel thread creating a file would see, and a parallel change of it
/// could be lost). An agent that cannot read it (confined without `/proc`) reads it with that
/// call after all, setting 077 meanwhile: a file created by another thread at that instant
/// gets fewer permissions, never more.
fn umask(status: Option<&str>) -> u32 {
    let from_proc = status
        .and_then(|s| status_field(s, "Umask:"))
        .and_then(|v| u32::from_str_radix(v, 8).ok());
    from_proc.unwrap_or_else(|| {
        // SAFETY: umask only swaps the mask.
        unsafe {
            let old = libc::umask(0o077);
            libc::umask(old);
            old as u32
        }
    })
}

/// The calling thread's `/proc` entries read at each run.
#[derive(Clone, Copy)]
enum ProcFile {
    /// `status`, for the umask and the seccomp filters, whole.
    Status,
    /// `cgroup`, whole.
    Cgroup,
    /// `oom_score_adj` (the process's, as each thread shows it), whole.
    OomScoreAdj,
    /// The link `ns/net`, itself (`O_PATH`, not followed), which names the thread's network
    /// namespace.
    NetLink,
    /// The link `ns/pid_for_children`, itself, which names the pid namespace of the thread's
    /// next child.
    PidForChildrenLink,
    /// `sessionid`, the audit session, whole.
    AuditSession,
    /// The process's `coredump_filter` (of its address space; no thread has one of its own).
    DumpFilter,
}

/// Each thread's open `/proc/thread-self` entries ([`ProcFile`]) with the pid of the process
/// that opened them (a forked child's copy names its parent's thread): opening costs about as
/// much as reading, so they stay open, close-on-exec, for the thread's life.
struct ThreadProc {
    pid: u32,
    files: [Entry; 7],
}

/// One of a thread's `/proc` entries.
#[derive(Default)]
enum Entry {
    /// Not opened yet, or its last open failed: opened at the next read.
    #[default]
    Unopened,
    Open(std::fs::File),
    /// This kernel does not have it, so it is not asked for again at every run: only
    /// `sessionid` (a kernel without audit) and `coredump_filter` (one without ELF core
    /// dumps), and only where the thread's `status` opened, so that a thread that had no
    /// `/proc` at first still sees one mounted later.
    Absent,
}

thread_local! {
    static THREAD_PROC: std::cell::RefCell<Option<ThreadProc>> =
        const { std::cell::RefCell::new(None) };
}

impl ProcFile {
    fn path(self) -> &'static str {
        match self {
            ProcFile::Status => "/proc/thread-self/status",
            ProcFile::Cgroup => "/proc/thread-self/cgroup",
            ProcFile::OomScoreAdj => "/proc/thread-self/oom_score_adj",
            ProcFile::NetLink => "/proc/thread-self/ns/net",
            ProcFile::PidForChildrenLink => "/proc/thread-self/ns/pid_for_children",
            ProcFile::AuditSession => "/proc/thread-self/sessionid",
            ProcFile::DumpFilter => "/proc/self/coredump_filter",
        }
    }

    /// The first read's buffer: enough for the whole text, as the kernel makes it today
    /// (`status` is about 1.5 KiB).
    fn size(self) -> usize {
        match self {
            ProcFile::Status => 4096,
            _ => 256,
        }
    }

    /// Its open descriptor, valid on this thread for the thread's life; `None` when it cannot
    /// be opened.
    fn open(self) -> Option<RawFd> {
        let pid = std::process::id();
        THREAD_PROC.with(|cell| {
            let mut cell = cell.borrow_mut();
            if cell.as_ref().is_none_or(|t| t.pid != pid) {
                *cell = Some(ThreadProc {
                    pid,
                    files: Default::default(),
                });
            }
            let files = &mut cell.as_mut()?.files;
            if matches!(files[self as usize], Entry::Unopened) {
                let status_open = matches!(files[ProcFile::Status as usize], Entry::Open(_));
                files[self as usize] = match self.open_file() {
                    Ok(file) => Entry::Open(file),
                    Err(e) if self.absent_for_good(&e, status_open) => Entry::Absent,
                    Err(_) => Entry::Unopened,
                };
            }
            match &files[self as usize] {
                Entry::Open(file) => Some(file.as_raw_fd()),
                _ => None,
            }
        })
    }

    /// Opens it: a namespace link as itself, never followed (the namespace it leads to at the
    /// time of the open would be held for good, not the thread's of each read).
    fn open_file(self) -> std::io::Result<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        if matches!(self, ProcFile::NetLink | ProcFile::PidForChildrenLink) {
            options.custom_flags(libc::O_PATH | libc::O_NOFOLLOW);
        }
        options.open(self.path())
    }

    /// Whether an open that failed with `error` tells that this kernel has no such entry, for
    /// the thread's life ([`Entry::Absent`]).
    fn absent_for_good(self, error: &std::io::Error, status_open: bool) -> bool {
        matches!(self, ProcFile::AuditSession | ProcFile::DumpFilter)
            && error.kind() == std::io::ErrorKind::NotFound
            && status_open
    }

    /// Its current text (from its start: `/proc` makes it anew at each read from offset 0);
    /// `None` when it cannot be opened or read.
    fn read(self) -> Option<Vec<u8>> {
        let fd = self.open()?;
        let mut bytes = vec![0; self.size()];
        let mut len = 0;
        loop {
            // SAFETY: reading into the free part of our buffer from our descriptor.
            let n = unsafe {
                libc::pread(
                    fd,
                    bytes[len..].as_mut_ptr().cast(),
                    bytes.len() - len,
                    len as libc::off_t,
                )
            };
            let n = usize::try_from(n).ok()?;
            len += n;
            // A `/proc` file's read fills the buffer as far as its text goes, so a read that
            // leaves room was the last: no second call, which would make the text again only
            // to find its end.
            if n == 0 || len < bytes.len() {
                bytes.truncate(len);
                return Some(bytes);
            }
            bytes.resize(len * 2, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_agent_fits_and_carries_nothing() {
        let now = Inheritance::now();
        assert_eq!(
            now.fit(Some(&now.clone())),
            Fit::Carry(Inherited::default())
        );
        assert_eq!(now.fit(None), Fit::NewZygote);
    }

    #[test]
    fn any_other_confinement_needs_a_new_zygote() {
        let then = Inheritance::now();
        assert!(
            then.confinement.seccomp_filters.is_some()
                && then.confinement.root.is_some()
                && then.confinement.namespaces.is_some(),
            "{:?}",
            then.confinement
        );
        let with = |change: &dyn Fn(&mut Confinement)| {
            let mut now = then.clone();
            change(&mut now.confinement);
            now
        };
        let changes: [&dyn Fn(&mut Confinement); 7] = [
            &|c| c.seccomp_filters = c.seccomp_filters.map(|n| n + 1),
            &|c| c.root = c.root.map(|(mount, dev, ino)| (mount + 1, dev, ino)),
            &|c| c.root = c.root.map(|(mount, dev, ino)| (mount, dev, ino + 1)),
            &|c| c.namespaces = c.namespaces.map(|[net, pid]| [net + 1, pid]),
            &|c| c.namespaces = c.namespaces.map(|[net, pid]| [net, pid + 1]),
            &|c| c.mdwe = Some(c.mdwe.unwrap_or(0) ^ 1),
            // Known then, unknown now (an agent that lost its /proc): a change too.
            &|c| c.namespaces = None,
        ];
        for change in changes {
            let now = with(change);
            assert_eq!(
                now.fit(Some(&then)),
                Fit::NewZygote,
                "{:?}",
                now.confinement
            );
        }
    }

    #[test]
    fn only_a_missing_audit_session_or_dump_filter_beside_a_readable_status_is_not_asked_for_again()
    {
        let missing = std::io::Error::from_raw_os_error(libc::ENOENT);
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        for optional in [ProcFile::AuditSession, ProcFile::DumpFilter] {
            assert!(optional.absent_for_good(&missing, true));
            // No /proc at all (yet): asked again at the next run.
            assert!(!optional.absent_for_good(&missing, false));
            assert!(!optional.absent_for_good(&denied, true));
        }
        for other in [ProcFile::Status, ProcFile::Cgroup, ProcFile::OomScoreAdj] {
            assert!(!other.absent_for_good(&missing, true));
        }
    }

    #[test]
    fn another_session_or_audit_session_needs_a_new_zygote() {
        let then = Inheritance::now();
        // SAFETY: getsid of this process.
        assert_eq!(then.session, Some(unsafe { libc::getsid(0) }));
        let moved = Inheritance {
            session: then.session.map(|s| s + 1),
            ..then.clone()
        };
        assert_eq!(moved.fit(Some(&then)), Fit::NewZygote);
        assert!(matches!(then.fit(Some(&then)), Fit::Carry(_)));
        if let Ok(file) = std::fs::read("/proc/self/sessionid") {
            assert_eq!(then.audit_session, Some(file));
        }
        let logged_in = Inheritance {
            audit_session: Some(b"4242".to_vec()),
            ..then.clone()
        };
        assert_eq!(logged_in.fit(Some(&then)), Fit::NewZygote);
    }

    #[test]
    fn other_flags_an_execve_keeps_need_a_new_zygote_and_unknown_ones_do_not() {
        let then = Inheritance::now();
        assert!(
            then.kept.thp_disable.is_some() && then.kept.dump_filter.is_some(),
            "PR_GET_THP_DISABLE and coredump_filter: {:?}",
            then.kept
        );
        let with = |kept: KeptFlags| Inheritance {
            kept,
            ..then.clone()
        };
        let flip = |v: Option<i32>| Some(v.unwrap_or(0) ^ 1);
        let k = then.kept;
        for kept in [
            KeptFlags {
                thp_disable: flip(k.thp_disable),
                ..k
            },
            KeptFlags {
                memory_merge: flip(k.memory_merge),
                ..k
            },
            KeptFlags {
                dump_filter: Some(k.dump_filter.unwrap_or(0) ^ 1),
                ..k
            },
            KeptFlags {
                store_bypass: flip(k.store_bypass),
                ..k
            },
            KeptFlags {
                indirect_branch: flip(k.indirect_branch),
                ..k
            },
            KeptFlags {
                numa_policy: Some((libc::MPOL_BIND, [1; NODE_WORDS])),
                ..k
            },
        ] {
            let now = with(kept);
            assert_eq!(now.fit(Some(&then)), Fit::NewZygote, "{kept:?}");
        }
        let unknown = with(KeptFlags {
            thp_disable: None,
            memory_merge: None,
            dump_filter: None,
            store_bypass: None,
            indirect_branch: None,
            numa_policy: None,
        });
        assert_eq!(unknown.fit(Some(&then)), Fit::Carry(Inherited::default()));
    }

    #[test]
    fn a_zygote_started_as_the_init_of_a_new_pid_namespace_holds_it() {
        let then = Inheritance::now();
        let mut unstarted = then.clone();
        let ids = unstarted.confinement.namespaces.as_mut().expect("readable");
        ids[PID_FOR_CHILDREN] = UNSTARTED;
        // A zygote started before is outside the new namespace.
        assert_eq!(unstarted.fit(Some(&then)), Fit::NewZygote);
        // One started since is its init: the agent's children start where it is.
        assert_eq!(
            unstarted.children_started_by(&then).fit(Some(&then)),
            Fit::Carry(Inherited::default())
        );
        // A namespace already started is never taken for another.
        let mut other = then.clone();
        other.confinement.namespaces.as_mut().expect("readable")[PID_FOR_CHILDREN] += 1;
        assert_eq!(
            other.children_started_by(&then).fit(Some(&then)),
            Fit::NewZygote
        );
    }

    #[test]
    fn a_lowered_limit_or_another_umask_travels_and_a_raised_hard_limit_or_a_move_does_not() {
        let then = Inheritance::now();
        let mut now = then.clone();
        now.umask = then.umask ^ 0o002;
        now.limits[7] = (64, 64.min(then.limits[7].1));
        assert_eq!(
            now.fit(Some(&then)),
            Fit::Carry(Inherited {
                umask: Some(now.umask),
                rlimits: vec![(libc::RLIMIT_NOFILE, 64, now.limits[7].1)],
                ..Inherited::default()
            })
        );
        let mut raised = then.clone();
        raised.limits[3].1 = if then.limits[3].1 == libc::RLIM_INFINITY {
            // An unlimited hard limit cannot be raised: a lower zygote's stands in.
            let mut lower = then.clone();
            lower.limits[3].1 = 1 << 20;
            assert_eq!(then.fit(Some(&lower)), Fit::NewZygote);
            then.limits[3].1
        } else {
            then.limits[3].1 + 1
        };
        if raised != then {
            assert_eq!(raised.fit(Some(&then)), Fit::NewZygote);
        }
        let mut moved = then.clone();
        moved.cgroups = Some(b"0::/elsewhere\n".to_vec());
        assert_eq!(moved.fit(Some(&then)), Fit::NewZygote);
    }

    #[test]
    fn a_higher_nice_value_or_another_affinity_travels_and_a_lower_nice_value_does_not() {
        let then = Inheritance::now();
        let mut now = then.clone();
        let nice = then.nice.expect("this thread's nice value");
        now.nice = Some(nice + 5);
        now.affinity = Some(vec![1]);
        let affinity = (now.affinity != then.affinity).then(|| vec![1]);
        assert_eq!(
            now.fit(Some(&then)),
            Fit::Carry(Inherited {
                nice: Some(nice + 5),
                affinity,
                ..Inherited::default()
            })
        );
        let mut lowered = then.clone();
        lowered.nice = Some(nice - 1);
        assert_eq!(lowered.fit(Some(&then)), Fit::NewZygote);
        // Unreadable on either side: the zygote's stands, and no zygote is started for it.
        let mut unknown = then.clone();
        unknown.nice = None;
        assert_eq!(unknown.fit(Some(&then)), Fit::Carry(Inherited::default()));
        assert_eq!(
            lowered.fit(Some(&unknown)),
            Fit::Carry(Inherited::default())
        );
    }

    #[test]
    fn another_policy_travels_unless_taking_it_may_need_a_privilege() {
        let then = Inheritance::now();
        let under = |policy: i32, priority: i32| Inheritance {
            policy: Some((policy, priority)),
            ..then.clone()
        };
        let carried = |policy| {
            Fit::Carry(Inherited {
                policy,
                ..Inherited::default()
            })
        };
        let (other, batch, idle) = (
            under(libc::SCHED_OTHER, 0),
            under(libc::SCHED_BATCH, 0),
            under(libc::SCHED_IDLE, 0),
        );
        let (fifo_1, fifo_2, rr_1) = (
            under(libc::SCHED_FIFO, 1),
            under(libc::SCHED_FIFO, 2),
            under(libc::SCHED_RR, 1),
        );
        // What a process may take without a privilege travels.
        for (now, zygote) in [
            (&batch, &other),
            (&idle, &other),
            (&other, &batch),
            (&idle, &batch),
            (&other, &fifo_1),
            (&batch, &rr_1),
            (&fifo_1, &fifo_2),
        ] {
            assert_eq!(now.fit(Some(zygote)), carried(now.policy), "{now:?}");
        }
        // Leaving SCHED_IDLE, taking real time, raising or switching it: a new zygote.
        for (now, zygote) in [
            (&other, &idle),
            (&batch, &idle),
            (&fifo_1, &other),
            (&fifo_2, &fifo_1),
            (&rr_1, &fifo_1),
        ] {
            assert_eq!(now.fit(Some(zygote)), Fit::NewZygote, "{now:?}");
        }
        // The same policy, or one unknown on either side: the zygote's stands.
        let unknown = Inheritance {
            policy: None,
            ..then.clone()
        };
        for (now, zygote) in [(&fifo_1, &fifo_1), (&unknown, &idle), (&fifo_1, &unknown)] {
            assert_eq!(now.fit(Some(zygote)), carried(None), "{now:?}");
        }
    }

    #[test]
    fn another_io_priority_or_a_higher_oom_score_travels_and_real_time_io_or_a_lower_score_does_not(
    ) {
        let then = Inheritance {
            ioprio: Some(2 << IOPRIO_CLASS_SHIFT | 4),
            oom_score_adj: Some(100),
            ..Inheritance::now()
        };
        let with = |ioprio: i32, oom_score_adj: i32| Inheritance {
            ioprio: Some(ioprio),
            oom_score_adj: Some(oom_score_adj),
            ..then.clone()
        };
        let idle_io = 3 << IOPRIO_CLASS_SHIFT;
        assert_eq!(
            with(idle_io, 300).fit(Some(&then)),
            Fit::Carry(Inherited {
                ioprio: Some(idle_io),
                oom_score_adj: Some(300),
                ..Inherited::default()
            })
        );
        let realtime_io = IOPRIO_CLASS_RT << IOPRIO_CLASS_SHIFT | 4;
        assert_eq!(with(realtime_io, 100).fit(Some(&then)), Fit::NewZygote);
        assert_eq!(
            with(then.ioprio.unwrap(), 50).fit(Some(&then)),
            Fit::NewZygote
        );
        let unknown = Inheritance {
            ioprio: None,
            oom_score_adj: None,
            ..then.clone()
        };
        assert_eq!(unknown.fit(Some(&then)), Fit::Carry(Inherited::default()));
    }

    #[test]
    fn the_io_priority_and_oom_score_adjustment_are_read_as_the_kernel_has_them() {
        let idle_io = 3 << IOPRIO_CLASS_SHIFT;
        let now = on_own_thread(|| {
            // SAFETY: ioprio_set of the calling thread (who 0) takes integers.
            let set = unsafe { libc::syscall(libc::SYS_ioprio_set, 1, 0, idle_io) };
            assert_eq!(set, 0, "{}", std::io::Error::last_os_error());
            Inheritance::now()
        });
        assert_eq!(now.ioprio, Some(idle_io));
        let file = std::fs::read_to_string("/proc/self/oom_score_adj").expect("oom_score_adj");
        assert_eq!(now.oom_score_adj, file.trim().parse().ok());
    }

    #[test]
    fn another_personality_travels() {
        let then = Inheritance {
            personality: Some(0),
            ..Inheritance::now()
        };
        let no_aslr = Inheritance {
            personality: Some(libc::ADDR_NO_RANDOMIZE),
            ..then.clone()
        };
        assert_eq!(
            no_aslr.fit(Some(&then)),
            Fit::Carry(Inherited {
                personality: Some(libc::ADDR_NO_RANDOMIZE),
                ..Inherited::default()
            })
        );
        // SAFETY: the query value changes nothing.
        let own = unsafe { libc::personality(0xffff_ffff) };
        assert_eq!(Inheritance::now().personality, Some(own));
    }

    #[test]
    fn another_timer_slack_travels_but_a_real_time_thread_s_none_does_not() {
        let then = Inheritance {
            timer_slack: Some(50_000),
            ..Inheritance::now()
        };
        let slack = |ns| Inheritance {
            timer_slack: Some(ns),
            ..then.clone()
        };
        assert_eq!(
            slack(3_000_000_000).fit(Some(&then)),
            Fit::Carry(Inherited {
                timer_slack: Some(3_000_000_000),
                ..Inherited::default()
            })
        );
        assert_eq!(slack(0).fit(Some(&then)), Fit::Carry(Inherited::default()));
        assert_eq!(
            slack(50_000).fit(Some(&then)),
            Fit::Carry(Inherited::default())
        );
        // Above what an `int` holds, read on a thread of its own.
        let read = on_own_thread(|| {
            // SAFETY: PR_SET_TIMERSLACK of the calling thread takes an integer.
            let set = unsafe {
                libc::syscall(
                    libc::SYS_prctl,
                    libc::PR_SET_TIMERSLACK,
                    3_000_000_000u64,
                    0,
                    0,
                    0,
                )
            };
            assert_eq!(set, 0, "{}", std::io::Error::last_os_error());
            Inheritance::now().timer_slack
        });
        assert_eq!(read, Some(3_000_000_000));
    }

    /// What reading the agent's values costs each hardened run:
    /// `cargo test --release -p sandbox --lib inheritance_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement"]
    fn inheritance_cost() {
        let rounds = 20_000;
        let per_call = |f: &dyn Fn()| {
            let t = std::time::Instant::now();
            for _ in 0..rounds {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / f64::from(rounds)
        };
        // The thread's `/proc` files are opened at its first read.
        std::hint::black_box(Inheritance::now());
        let all = per_call(&|| {
            std::hint::black_box(Inheritance::now());
        });
        println!("Inheritance::now: {all:.1} µs per read ({rounds} reads)");
        let slack = per_call(&|| {
            std::hint::black_box(timer_slack());
        });
        println!("of which the timer slack: {slack:.2} µs");
        let kept = per_call(&|| {
            std::hint::black_box(KeptFlags::now());
        });
        println!(
            "of which the flags an execve keeps (four prctl, get_mempolicy, coredump_filter): \
             {kept:.2} µs"
        );
        let dump_filter = per_call(&|| {
            std::hint::black_box(ProcFile::DumpFilter.read());
        });
        println!("  of which the core dump filter: {dump_filter:.2} µs");
        let sessions = per_call(&|| {
            // SAFETY: getsid of this process.
            std::hint::black_box(unsafe { libc::getsid(0) });
            std::hint::black_box(ProcFile::AuditSession.read());
        });
        println!("of which the session and audit session (getsid, sessionid): {sessions:.2} µs");
    }

    /// Runs `f` on a thread of its own, whose scheduling it may change.
    fn on_own_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|s| s.spawn(f).join().expect("the thread"))
    }

    /// Sets the calling thread's scheduling policy.
    fn set_policy(policy: i32, priority: i32) -> std::io::Result<()> {
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: sched_setscheduler of the calling thread with a valid struct.
        match unsafe { libc::sched_setscheduler(0, policy, &param) } {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    }

    #[test]
    fn the_thread_s_policy_is_read_as_a_child_of_it_would_start() {
        for policy in [libc::SCHED_BATCH, libc::SCHED_IDLE] {
            let now = on_own_thread(|| {
                set_policy(policy, 0).expect("a policy any thread may take");
                Inheritance::now()
            });
            assert_eq!(now.policy, Some((policy, 0)));
        }
        // Real time, and the reset a child of it gets, need CAP_SYS_NICE (or RLIMIT_RTPRIO).
        let realtime = on_own_thread(|| {
            set_policy(libc::SCHED_FIFO, 1).ok()?;
            let plain = Inheritance::now();
            // SAFETY: setpriority of the calling thread takes integers.
            let lowered = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -5) } == 0;
            set_policy(libc::SCHED_RR | libc::SCHED_RESET_ON_FORK, 2).ok()?;
            Some((plain, lowered, Inheritance::now()))
        });
        let Some((plain, lowered, reset)) = realtime else {
            eprintln!("the real-time part is not shown: this test may not take SCHED_FIFO");
            return;
        };
        assert_eq!(plain.policy, Some((libc::SCHED_FIFO, 1)));
        assert_eq!(reset.policy, Some((libc::SCHED_OTHER, 0)));
        if lowered {
            assert_eq!(
                reset.nice,
                Some(0),
                "a child of the thread starts at nice 0"
            );
        }
    }

    #[test]
    fn the_thread_s_nice_value_and_affinity_are_read_as_the_kernel_has_them() {
        let now = Inheritance::now();
        // SAFETY: getpriority with integers; errno is cleared first because -1 is a value.
        let libc_nice = unsafe {
            *libc::__errno_location() = 0;
            libc::getpriority(libc::PRIO_PROCESS, 0)
        };
        assert_eq!(now.nice, Some(libc_nice));
        // The kernel's own account: `Cpus_allowed`, 32-bit hex groups, highest first.
        let status = std::fs::read_to_string("/proc/thread-self/status").expect("status");
        let mask = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed:"))
            .expect("a Cpus_allowed line");
        let mut words = Vec::new();
        for (i, group) in mask.trim().rsplit(',').enumerate() {
            let bits = u64::from_str_radix(group, 16).expect("hex");
            words.resize(words.len().max(i / 2 + 1), 0);
            words[i / 2] |= bits << (32 * (i % 2));
        }
        while words.last() == Some(&0) {
            words.pop();
        }
        assert_eq!(now.affinity, Some(words));
    }
}
