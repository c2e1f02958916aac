//! What this host can enforce: Landlock ABI, seccomp, user namespaces, pids and memory cgroups.
//!
//! [`HostSupport::detect`] reads sysctls and asks the kernel; it is cached for the process
//! ([`HostSupport::cached`]). [`HostSupport::probe_namespaces`] really creates the namespaces in
//! a throwaway child, for `policy-sandbox check`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Serialize;

/// The enforcement features of the running host.
#[derive(Clone, Debug, Serialize)]
pub struct HostSupport {
    /// Landlock ABI version (0: none).
    pub landlock_abi: i32,
    /// seccomp filters are available.
    pub seccomp: bool,
    /// Whether this process may create user namespaces, or why not.
    #[serde(serialize_with = "ser_result")]
    pub user_ns: Result<(), String>,
    /// A writable pids cgroup hierarchy to create per-run cgroups under.
    pub pids_cgroup: Option<PidsCgroup>,
    /// A writable memory cgroup hierarchy to create per-run cgroups under.
    pub memory_cgroup: Option<CgroupParent>,
    /// The effective uid of the runner.
    pub euid: u32,
    /// Whether the runner's user is the host's root (uid 0 of the initial user namespace),
    /// whatever uid it has in a user namespace of its own. Two guarantees turn on it: the
    /// kernel enforces `RLIMIT_NPROC` for every user but the host's root, and the host's root
    /// owns the system's files, whose mode a tool without capabilities could still change.
    /// Known from the uid in the initial user namespace; in another, asked of the kernel once
    /// per process (a forked probe).
    pub host_root: bool,
}

impl HostSupport {
    /// Whether the files the runner's uid owns are a system's own: it is root, of the host
    /// ([`HostSupport::host_root`], whatever uid it has here) or of the user namespace it runs
    /// in (a container's root owns the container's system files, whatever uid the host gives
    /// it). The hardened profile then refuses every metadata write, which Landlock does not
    /// govern.
    ///
    /// ```
    /// use sandbox::hostcaps::HostSupport;
    /// let mut host = HostSupport::assume_full();
    /// host.euid = 1000;
    /// host.host_root = false;
    /// assert!(!host.owns_system_files());
    /// host.euid = 0;
    /// assert!(host.owns_system_files());
    /// ```
    pub fn owns_system_files(&self) -> bool {
        self.euid == 0 || self.host_root
    }
}

/// Where the per-run cgroups of one controller are created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CgroupParent {
    /// Directory under which `toolpolicy-<pid>-<n>` cgroups are made.
    pub parent: PathBuf,
    /// cgroup v2 (one unified hierarchy) or v1 (one hierarchy per controller).
    pub v2: bool,
}

/// Where per-run pids cgroups are created (the name predates the memory controller).
pub type PidsCgroup = CgroupParent;

/// The full detection of [`HostSupport::cached`].
static FULL: OnceLock<HostSupport> = OnceLock::new();

fn ser_result<S: serde::Serializer>(r: &Result<(), String>, s: S) -> Result<S::Ok, S::Error> {
    match r {
        Ok(()) => s.serialize_str("available"),
        Err(e) => s.serialize_str(e),
    }
}

impl HostSupport {
    /// Detects once per process.
    pub fn cached() -> &'static HostSupport {
        FULL.get_or_init(HostSupport::detect)
    }

    /// What planning a policy needs, detected once per process: everything when
    /// `needs_cgroups` (the policy sets `limits.memory_bytes` or `limits.max_processes`, which
    /// cgroups enforce), else everything but the cgroup hierarchies (`pids_cgroup` and
    /// `memory_cgroup` are `None`), which spares the runs of every other policy reading the
    /// mount table. A full detection already made is returned either way.
    ///
    /// ```
    /// use sandbox::hostcaps::HostSupport;
    /// let light = HostSupport::cached_for(false);
    /// let full = HostSupport::cached_for(true);
    /// assert_eq!(light.landlock_abi, full.landlock_abi);
    /// ```
    pub fn cached_for(needs_cgroups: bool) -> &'static HostSupport {
        if needs_cgroups {
            return HostSupport::cached();
        }
        if let Some(full) = FULL.get() {
            return full;
        }
        static LIGHT: OnceLock<HostSupport> = OnceLock::new();
        LIGHT.get_or_init(|| HostSupport::detect_with(false))
    }

    /// Reads the kernel's answers now.
    pub fn detect() -> HostSupport {
        HostSupport::detect_with(true)
    }

    fn detect_with(cgroups: bool) -> HostSupport {
        let euid = unsafe { libc::geteuid() };
        // Both controllers are looked up in one reading of the mount table.
        let tables = (cgroups && euid == 0).then(CgroupTables::read).flatten();
        let find = |controller| tables.as_ref().and_then(|t| t.find(controller));
        HostSupport {
            landlock_abi: landlock_abi(),
            seccomp: seccomp_available(),
            user_ns: user_ns_allowed(euid, host_ids()),
            pids_cgroup: find("pids"),
            memory_cgroup: find("memory"),
            euid,
            host_root: host_root(euid),
        }
    }

    /// A host with everything, for tests of the plan.
    pub fn assume_full() -> HostSupport {
        HostSupport {
            landlock_abi: 7,
            seccomp: true,
            user_ns: Ok(()),
            pids_cgroup: Some(PidsCgroup {
                parent: PathBuf::from("/sys/fs/cgroup/pids"),
                v2: false,
            }),
            memory_cgroup: Some(CgroupParent {
                parent: PathBuf::from("/sys/fs/cgroup/memory"),
                v2: false,
            }),
            euid: 0,
            host_root: true,
        }
    }

    /// Creates user, mount, pid and network namespaces in a forked child and reports what
    /// failed. Forks this process: call it from a small program (the CLI), not from an agent.
    pub fn probe_namespaces() -> Result<(), String> {
        let flags =
            libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWNET;
        // SAFETY: the child only calls async-signal-safe functions before _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("fork failed: {}", std::io::Error::last_os_error()));
        }
        if pid == 0 {
            let rc = unsafe { libc::unshare(flags) };
            let errno = if rc == 0 {
                0
            } else {
                unsafe { *libc::__errno_location() }
            };
            unsafe { libc::_exit(errno.min(255)) };
        }
        let mut status = 0;
        // SAFETY: reaping our own child (with SIGCHLD ignored the kernel reaps it, and there
        // is no answer).
        if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
            return Err(format!(
                "the probe's child could not be waited for: {}",
                std::io::Error::last_os_error()
            ));
        }
        match libc::WEXITSTATUS(status) {
            0 => Ok(()),
            e => Err(format!(
                "unshare(user|mount|pid|net) failed: {}{}",
                std::io::Error::from_raw_os_error(e),
                seccomp_filter_note().map_or(String::new(), |note| format!(" ({note})"))
            )),
        }
    }
}

/// The kernel's Landlock ABI version, 0 when Landlock is missing or disabled.
pub fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: a version query takes no pointer.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v < 0 {
        0
    } else {
        v as i32
    }
}

/// When this process runs under a seccomp filter (a container's, a sandbox's), which may refuse
/// namespaces whatever the host allows: what to say about it in a refusal.
pub(crate) fn seccomp_filter_note() -> Option<&'static str> {
    // SAFETY: a query without pointers.
    let filtered = unsafe { libc::prctl(libc::PR_GET_SECCOMP) } == 2;
    filtered.then_some(
        "this process runs under a seccomp filter of its own, a container's or a sandbox's, \
         which may refuse namespaces whatever the host allows: run it without that filter",
    )
}

fn seccomp_available() -> bool {
    // PR_GET_SECCOMP fails with EINVAL when the kernel lacks seccomp.
    let prctl_ok = unsafe { libc::prctl(libc::PR_GET_SECCOMP) } >= 0;
    prctl_ok && Path::new("/proc/sys/kernel/seccomp/actions_avail").exists()
}

/// Whether `id` lies in a range of `/proc/self/<map>` (`uid_map` or `gid_map`: lines of
/// `inside outside count`, inside being this process's namespace). A map that cannot be read
/// does not refuse: the `clone` will say.
fn mapped(map: &str, id: u32) -> bool {
    let Ok(text) = std::fs::read_to_string(format!("/proc/self/{map}")) else {
        return true;
    };
    text.lines().any(|line| {
        let mut fields = line.split_whitespace().map(|f| f.parse::<u64>().ok());
        match (fields.next().flatten(), fields.nth(1).flatten()) {
            (Some(inside), Some(count)) => (inside..inside + count).contains(&u64::from(id)),
            _ => false,
        }
    })
}

/// Whether this process's uids are the host's: its `uid_map` maps every id to itself, as the
/// initial user namespace's does (and one the host's root made with the same map, whose ids
/// are the host's too).
fn host_ids() -> bool {
    std::fs::read_to_string("/proc/self/uid_map")
        .is_ok_and(|map| map.split_whitespace().eq(["0", "0", "4294967295"]))
}

/// Whether the runner's user is the host's root ([`HostSupport::host_root`]). Where its uids
/// are the host's ([`host_ids`]), its uid says. Elsewhere the host's uid behind this one cannot
/// be seen, so the kernel is asked the one question it answers differently for the host's
/// root: whether `RLIMIT_NPROC` holds. A forked child drops every capability, sets the limit
/// to 1 and forks; the kernel refuses that fork (`EAGAIN`) for every user but the host's root.
/// Anything else (the probe cannot run) counts as the host's root, which refuses more and
/// claims less.
fn host_root(euid: u32) -> bool {
    if host_ids() {
        return euid == 0;
    }
    // Neither is 0, which a status never written would read as.
    const LIMITED: i32 = 10;
    const UNLIMITED: i32 = 11;
    // SAFETY: the child only makes system calls on local values before _exit (this process may
    // have threads).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return true;
    }
    if pid == 0 {
        let header = [0x2008_0522u32, 0];
        let no_caps = [0u32; 6];
        let one = libc::rlimit {
            rlim_cur: 1,
            rlim_max: 1,
        };
        // SAFETY: capset and setrlimit of this child alone; fork, whose child leaves at once.
        unsafe {
            if libc::syscall(libc::SYS_capset, header.as_ptr(), no_caps.as_ptr()) != 0
                || libc::setrlimit(libc::RLIMIT_NPROC, &one) != 0
            {
                libc::_exit(2);
            }
            let grandchild = libc::fork();
            if grandchild == 0 {
                libc::_exit(0);
            }
            if grandchild > 0 {
                libc::waitpid(grandchild, std::ptr::null_mut(), 0);
                libc::_exit(UNLIMITED);
            }
            let refused = *libc::__errno_location() == libc::EAGAIN;
            libc::_exit(if refused { LIMITED } else { 2 });
        }
    }
    let mut status = 0;
    // SAFETY: reaping our own child. With SIGCHLD ignored the kernel reaps it instead and
    // waitpid fails: no answer, which counts as the host's root.
    let reaped = unsafe { libc::waitpid(pid, &mut status, 0) } == pid;
    !(reaped && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == LIMITED)
}

fn read_num(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// `host_ids`: the runner's uids are the host's ([`host_ids`]): only the host's root is exempt
/// from the sysctls that restrict unprivileged user namespaces; root of another user namespace
/// is unprivileged to them.
fn user_ns_allowed(euid: u32, host_ids: bool) -> Result<(), String> {
    if read_num("/proc/sys/user/max_user_namespaces") == Some(0) {
        return Err("user namespaces are disabled (user.max_user_namespaces = 0)".into());
    }
    // SAFETY: getegid cannot fail.
    let egid = unsafe { libc::getegid() };
    for (map, id, what) in [("uid_map", euid, "uid"), ("gid_map", egid, "gid")] {
        if !mapped(map, id) {
            return Err(format!(
                "this process's {what} {id} is not mapped in its user namespace (/proc/self/{map} \
                 maps no range that holds it), and the kernel makes a user namespace only for \
                 a process whose ids are mapped: run it where they are (`unshare -r`, a \
                 container with an id map), or ask for the hardened profile by name"
            ));
        }
    }
    if euid != 0 || !host_ids {
        if read_num("/proc/sys/kernel/unprivileged_userns_clone") == Some(0) {
            return Err(
                "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
                    .into(),
            );
        }
        if read_num("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == Some(1) {
            return Err("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)".into());
        }
    }
    Ok(())
}

/// Finds where this (root) process can create cgroups with `controller`: in cgroup v1, the
/// runner's own cgroup of that controller's hierarchy (so whatever limits the runner also
/// limits the runs nested below it); in cgroup v2, the root, when it delegates the controller
/// (a non-root v2 cgroup holding the runner cannot enable controllers for children: the "no
/// internal processes" rule).
fn find_cgroup(mountinfo: &str, own: &str, controller: &str) -> Option<CgroupParent> {
    let mut v2 = None;
    for line in mountinfo.lines() {
        let (left, right) = line.split_once(" - ")?;
        let mountpoint = left.split(' ').nth(4)?;
        let mut r = right.split(' ');
        let fstype = r.next()?;
        let _source = r.next();
        let options = r.next().unwrap_or("");
        if fstype == "cgroup" && options.split(',').any(|o| o == controller) {
            let mut dir = PathBuf::from(unescape(mountpoint));
            // `/proc/self/cgroup` lines read `ID:controller[,controller]:/path`.
            let own_path = own.lines().find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
                list.split(',').any(|c| c == controller).then_some(path)
            });
            if let Some(path) = own_path {
                dir.push(path.trim_start_matches('/'));
            }
            if writable_dir(&dir) {
                return Some(CgroupParent {
                    parent: dir,
                    v2: false,
                });
            }
        }
        if fstype == "cgroup2" && v2.is_none() {
            v2 = Some(PathBuf::from(unescape(mountpoint)));
        }
    }
    let root = v2?;
    let controllers = std::fs::read_to_string(root.join("cgroup.subtree_control")).ok()?;
    if controllers.split_whitespace().any(|c| c == controller) && writable_dir(&root) {
        return Some(CgroupParent {
            parent: root,
            v2: true,
        });
    }
    None
}

/// The process's mount table and cgroup memberships, read once for every controller.
struct CgroupTables {
    mountinfo: String,
    own: String,
}

impl CgroupTables {
    fn read() -> Option<CgroupTables> {
        Some(CgroupTables {
            mountinfo: std::fs::read_to_string("/proc/self/mountinfo").ok()?,
            own: std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default(),
        })
    }

    fn find(&self, controller: &str) -> Option<CgroupParent> {
        find_cgroup(&self.mountinfo, &self.own, controller)
    }
}

fn writable_dir(dir: &Path) -> bool {
    let c = match std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) {
        Ok(c) => c,
        Err(_) => return false,
    };
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}
