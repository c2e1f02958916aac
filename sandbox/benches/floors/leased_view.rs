//! The floor of a strict run as a root runner makes it: in a view namespace built once and
//! leased to each run ([`sandbox::mounts`]'s `view_ns`), with nothing of the runner around the
//! kernel's work.
//!
//! The view holds what the bench's 1-root strict policy sees: `/usr` and `/etc` read-only, the
//! host's top-level links into `/usr` (or binds of those directories), the declared root, the
//! five device nodes, and mount points for the per-run filesystems, with an IPC namespace and a
//! user namespace made beside it and a devpts instance mounted in it (the runner lends all three
//! with each view namespace, `sandbox/src/ipcns.rs`, `sandbox/src/mounts/lent_user.rs` and
//! `sandbox/src/mounts/lent_pts.rs`). Each run, in the child of a `vfork`-style `clone` into a
//! new pid namespace:
//!
//! 1. joins the view and its IPC namespace (`setns`), detaches the previous run's `/proc` (the
//!    detach waits for an RCU grace period, as the runner's do);
//! 2. mounts a `/proc` for its pid namespace; the sized scratch tmpfs whose `tmp` and `shm`
//!    directories are attached at `/tmp` and `/dev/shm` is made with the namespace, and every
//!    run keeps it, as the runner keeps a scratch that `/bin/true` never touches
//!    (`sandbox/src/mounts/view_ns.rs`);
//! 3. joins the user namespace made with the view, which maps the runner's uid and gid to
//!    1000 (a run of the runner's made its own and wrote its maps until the runner lent one);
//! 4. empties its capability sets, sets NO_NEW_PRIVS, and enforces the Landlock rules of that
//!    view and the strict seccomp filter. The rules of the view's lasting paths, and of the
//!    scratch's directories and the devpts instance, are made from descriptors opened once (the
//!    runner's come from its template's, its scratch's and its devpts instance's), that of the
//!    run's `/proc` from the path opened in the run. The ruleset handles the filesystem rights;
//!    the runner's also handles TCP and the scopes, which add no rule;
//! 5. executes `/bin/true`.
//!
//! **Supervised** ([`Variant::Supervised`]): the same, with the supervision that a strict run
//! of `net = deny`, `exec = deny` cannot go without. Its seccomp program is the runner's for
//! that policy, which sends `execve` and `connect` to a listener (pathname unix sockets are
//! beyond Landlock's reach, and the command's own `execve` is the only one admitted). The child
//! installs it with a new listener and passes the listener to the caller over a socket pair;
//! the caller answers the `execve`'s notification and serves the listener until the command
//! has ended. Because the child's `execve` waits for that answer, the caller cannot be
//! suspended until it (no `CLONE_VFORK`); it shares the child's memory as the runner's caller
//! does (`CLONE_VM`), and waits on the child's pidfd. Output stays on the caller's descriptors,
//! as plain's goes to `/dev/null`: capturing it is the runner's service, not a confinement.
//!
//! **Sealed** ([`Variant::Sealed`]): the same supervision, with the command's own `execve`
//! admitted by a secret instead of an answer, as the hardened command's is. The program lets
//! `execve` through and a second filter, the hardened tail sealed with a secret drawn for each
//! run, admits only the one that carries the secret in its unused registers. The child then
//! waits for nothing, so the caller is suspended until its `execve` (`CLONE_VFORK`), then takes
//! the listener and serves it to the end.
//!
//! **Held** ([`Variant::Held`]): the unsupervised floor again, in a view whose mount
//! namespace belongs to a user namespace made with it and held, as a template of an
//! unprivileged runner's would have to. A run's child cloned into a user namespace of its own
//! could not join that view, so each run takes two children: the first joins the held user
//! namespace and the view and makes the pid namespace; the second, made with
//! `CLONE_PARENT` so that it is the caller's child, does what the leased floor's child does,
//! and the first ends once it has executed. A procfs is mounted in a user namespace only
//! where one is fully visible already, so the view binds the host's `/proc` under each run's
//! own. The runner builds this design for a runner without `CAP_SYS_ADMIN` over its mounts
//! (`sandbox/src/mounts/held.rs`, which also makes each run's scratch through a helper in the
//! held namespaces); the floor measures the kernel's part of it.
//!
//! It needs root, as the runner's leased view does (other runners build their view per run,
//! which the floor above the bare `clone` measures).

use std::cell::Cell;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use super::{fdpass, raw};

/// One step of the view's build, in the helper's private mount namespace.
enum Step {
    Dir(CString),
    Link {
        target: CString,
        at: CString,
    },
    /// An empty file, to bind a device node on.
    File(CString),
    /// A recursive bind of `from` on `at`, read-only unless `writable`.
    Bind {
        from: CString,
        at: CString,
        writable: bool,
    },
}

/// A view namespace built once, and what each run's child does in it.
pub(crate) struct LeasedView {
    ns: OwnedFd,
    /// The IPC namespace made with the view, which each run's child joins.
    ipc: OwnedFd,
    /// The directory the helper mounted the view's root on, in its namespace only.
    _root: tempfile::TempDir,
    /// The declared root the view binds.
    _declared: tempfile::TempDir,
    /// No previous run's filesystems to detach yet.
    fresh: Cell<bool>,
    /// The user namespace made with the view, which each run's child joins last.
    user: OwnedFd,
    filter: Vec<libc::sock_filter>,
    /// The filesystem rights the ruleset handles.
    handled: u64,
    /// The lasting paths' descriptors, with their rights.
    lasting: Vec<(OwnedFd, u64)>,
    /// The run's own filesystems, with their rights.
    per_run: [(&'static CStr, u64); 1],
    /// The child's end of the channel its listener goes to ([`Variant::Supervised`]), or -1
    /// when its filter has no listener.
    listener_to: Cell<RawFd>,
    supervised: bool,
    /// The sealed variant's tail ([`Variant::Sealed`]), sealed afresh for each run.
    sealed: Option<Sealed>,
    /// The held variant's user namespace and second child ([`Variant::Held`]).
    held: Option<Held>,
}

/// A view whose mount namespace belongs to a user namespace the runner holds, as an
/// unprivileged runner's would have to: its user namespace, the second child's stack, which
/// child is running, and the second child's pid.
struct Held {
    user: OwnedFd,
    stack: std::cell::RefCell<Vec<u8>>,
    second: Cell<bool>,
    pid: Cell<libc::pid_t>,
}

/// How a view's runs are supervised, and where its mount namespace belongs.
pub(crate) enum Variant {
    /// The filter has no listener; the caller waits as a `vfork` caller does.
    Unsupervised,
    /// The filter's listener goes to the caller, which answers the command's `execve` and
    /// serves the listener to the end ([`LeasedView::spawn_supervised`]).
    Supervised,
    /// As `Supervised`, but the filter lets every `execve` through, and this tail, sealed with a
    /// secret drawn for each run, admits only the one that carries the secret in its unused
    /// registers: nothing waits for the caller before the `execve`, so the caller is suspended
    /// until it, as with `vfork`.
    Sealed(Vec<libc::sock_filter>),
    /// Unsupervised, in a mount namespace that belongs to a user namespace built with it and
    /// held, as an unprivileged runner's template would have to be. Its runs are the design
    /// that serves one (`sandbox/src/mounts/held.rs`): a first child joins that user namespace
    /// and the view, makes the pid namespace, and starts the second as its parent's
    /// child (`CLONE_PARENT`), which does what a leased run's child does; the first ends once
    /// the second has executed ([`LeasedView::start_second`]).
    Held,
}

/// The command's own `execve` admitted by a secret, as the hardened command's is: the tail
/// that compares it, its copy sealed for the run, and the registers that carry it.
struct Sealed {
    tail: Vec<libc::sock_filter>,
    run_tail: std::cell::RefCell<Vec<libc::sock_filter>>,
    registers: Cell<[u64; 3]>,
}

const DEVICES: [&str; 5] = ["null", "zero", "full", "random", "urandom"];
const PER_RUN: [&CStr; 1] = [c"/proc"];

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

impl LeasedView {
    /// Builds the view of `/usr`, `/etc` and a declared root made in `base` (outside `/tmp`,
    /// which each run's scratch covers), whose runs load `filter` and a Landlock ruleset of
    /// `abi`, and are run as `variant` says.
    pub(crate) fn build(
        base: &Path,
        filter: Vec<libc::sock_filter>,
        abi: i32,
        variant: Variant,
    ) -> Result<LeasedView, String> {
        let hold_user = matches!(variant, Variant::Held);
        // SAFETY: getters without pointers.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        if uid != 0 {
            return Err("the leased view needs a root runner, as the runner's own does".into());
        }
        let declared = tempfile::Builder::new()
            .prefix("toolpolicy-bench-root-")
            .tempdir_in(base)
            .map_err(|e| format!("declared root: {e}"))?;
        let root = std::fs::canonicalize(declared.path()).map_err(|e| format!("root: {e}"))?;
        let root = root.as_path();
        let dir = tempfile::Builder::new()
            .prefix("toolpolicy-bench-view-")
            .tempdir()
            .map_err(|e| format!("view root directory: {e}"))?;
        let base = dir.path().display().to_string();
        let at = |p: &str| c(&format!("{base}{p}"));
        let mut steps = Vec::new();
        for p in [
            "/usr", "/etc", "/proc", "/dev", "/dev/pts", "/dev/shm", "/tmp",
        ] {
            steps.push(Step::Dir(at(p)));
        }
        if hold_user {
            // A procfs may be mounted in a user namespace only where one is fully visible
            // already: the host's, under each run's own `/proc`, which hides it.
            steps.push(Step::Bind {
                from: c("/proc"),
                at: at("/proc"),
                writable: true,
            });
        }
        for p in ["/usr", "/etc"] {
            steps.push(Step::Bind {
                from: c(p),
                at: at(p),
                writable: false,
            });
        }
        // Merged-`/usr` hosts link these into `/usr`; others have directories to bind.
        for p in ["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"] {
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.file_type().is_symlink() => {
                    let target = std::fs::read_link(p).map_err(|e| format!("{p}: {e}"))?;
                    steps.push(Step::Link {
                        target: c(&target.display().to_string()),
                        at: at(p),
                    });
                }
                Ok(m) if m.is_dir() => {
                    steps.push(Step::Dir(at(p)));
                    steps.push(Step::Bind {
                        from: c(p),
                        at: at(p),
                        writable: false,
                    });
                }
                _ => {}
            }
        }
        let mut parent = String::new();
        for part in root.iter().skip(1) {
            parent = format!("{parent}/{}", part.to_string_lossy());
            steps.push(Step::Dir(at(&parent)));
        }
        steps.push(Step::Bind {
            from: c(&root.display().to_string()),
            at: at(&root.display().to_string()),
            writable: false,
        });
        for d in DEVICES {
            let node = format!("/dev/{d}");
            steps.push(Step::File(at(&node)));
            steps.push(Step::Bind {
                from: c(&node),
                at: at(&node),
                writable: true,
            });
        }
        let (ns, ipc, held_user, dirs) = build_namespace(&c(&base), &steps, hold_user)?;
        let held = held_user.map(|user| Held {
            user,
            stack: std::cell::RefCell::new(vec![0u8; 256 << 10]),
            second: Cell::new(false),
            pid: Cell::new(-1),
        });
        let all = raw::all_fs_rights(abi);
        let (read, exec) = (raw::READ_FILE | raw::READ_DIR, raw::EXECUTE);
        // Writing a file, truncating it and its device ioctls: what a file rule may hold.
        let file_rw = all & (raw::READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV);
        let dir_rw = all & !exec;
        let mut lasting = Vec::new();
        let devices = DEVICES.map(|d| (format!("/dev/{d}"), file_rw));
        let paths = [
            ("/usr".to_string(), read | exec),
            ("/etc".to_string(), read),
            (root.display().to_string(), read),
        ];
        for (path, access) in paths.into_iter().chain(devices) {
            // The host's path is the inode the view binds: a rule is the inode's.
            let fd = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
            lasting.push((OwnedFd::from(fd), access));
        }
        lasting.extend(dirs.map(|dir| (dir, dir_rw)));
        Ok(LeasedView {
            ns,
            ipc,
            _root: dir,
            _declared: declared,
            fresh: Cell::new(true),
            user: lent_user(
                held.as_ref().map(|h| h.user.as_fd()),
                &[
                    (c("setgroups"), c("deny")),
                    (c("uid_map"), c(&format!("1000 {uid} 1"))),
                    (c("gid_map"), c(&format!("1000 {gid} 1"))),
                ],
            )?,
            filter,
            handled: all,
            lasting,
            per_run: [(c"/proc", read)],
            listener_to: Cell::new(-1),
            supervised: matches!(variant, Variant::Supervised | Variant::Sealed(_)),
            sealed: match variant {
                Variant::Sealed(tail) => Some(Sealed {
                    run_tail: std::cell::RefCell::new(tail.clone()),
                    tail,
                    registers: Cell::new([0; 3]),
                }),
                _ => None,
            },
            held,
        })
    }

    /// Whether this is a held view whose first child is to run now (not its second).
    pub(crate) fn first_of_two(&self) -> bool {
        self.held.as_ref().is_some_and(|h| !h.second.get())
    }

    /// The first child of a held view's run: joins the held user namespace and the view,
    /// makes the pid namespace, and starts `entry(arg)` as its parent's child on the
    /// held stack; returns once that second child has executed or ended.
    ///
    /// # Safety
    /// In the first child only, whose parent waits (`CLONE_VFORK`); `arg` stays valid.
    pub(crate) unsafe fn start_second(
        &self,
        entry: extern "C" fn(*mut libc::c_void) -> libc::c_int,
        arg: *mut libc::c_void,
    ) -> bool {
        let Some(held) = &self.held else {
            return false;
        };
        // SAFETY: setns and unshare on descriptors held here; the clone runs `entry` on the
        // held stack, which no one else uses while the second child runs (this one waits).
        unsafe {
            if libc::setns(held.user.as_raw_fd(), libc::CLONE_NEWUSER) != 0
                || libc::setns(self.ns.as_raw_fd(), libc::CLONE_NEWNS) != 0
                || libc::unshare(libc::CLONE_NEWPID) != 0
            {
                return false;
            }
            held.second.set(true);
            let mut stack = held.stack.borrow_mut();
            let top = stack.as_mut_ptr().add(stack.len() & !15).cast();
            let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PARENT | libc::SIGCHLD;
            let pid = libc::clone(entry, top, flags, arg);
            held.pid.set(pid);
            pid > 0
        }
    }

    /// After a held view's first child ended: the second child, the caller's to reap, and
    /// the next run starts with a first child again.
    pub(crate) fn second_child(&self) -> Option<libc::pid_t> {
        let held = self.held.as_ref()?;
        held.second.set(false);
        Some(held.pid.replace(-1))
    }

    /// The registers the child's `execve` must carry, when its tail is sealed.
    pub(crate) fn exec_registers(&self) -> Option<[u64; 3]> {
        self.sealed.as_ref().map(|s| s.registers.get())
    }

    /// Draws the run's secret and seals the run's copy of the tail with it.
    fn seal_for_run(sealed: &Sealed) -> bool {
        let Ok(words) = sandbox::seccomp::draw_secret() else {
            return false;
        };
        let mut tail = sealed.run_tail.borrow_mut();
        tail.copy_from_slice(&sealed.tail);
        sealed
            .registers
            .set(sandbox::seccomp::secret_registers(&words));
        sandbox::seccomp::seal(&mut tail, &words)
    }

    /// Whether runs of this view need [`LeasedView::spawn_supervised`].
    pub(crate) fn is_supervised(&self) -> bool {
        self.supervised
    }

    /// Clones `entry` with `arg` (whose child calls [`LeasedView::apply`]) into the namespaces
    /// of `flags`, sharing this thread's memory, on `stack`; answers the child's `execve`
    /// notification, serves its listener until it has ended, and reaps it. False when any
    /// step fails (the child is killed and reaped).
    ///
    /// # Safety
    /// `arg` and `stack` must stay valid until this returns, and the child must make only
    /// system calls (no allocation): it shares this thread's memory while this thread runs on.
    pub(crate) unsafe fn spawn_supervised(
        &self,
        entry: extern "C" fn(*mut libc::c_void) -> libc::c_int,
        arg: *mut libc::c_void,
        flags: libc::c_int,
        stack: &mut [u8],
    ) -> bool {
        let mut pair = [-1; 2];
        let kind = libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC;
        // SAFETY: socketpair fills the array.
        if unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, pair.as_mut_ptr()) } != 0 {
            return false;
        }
        self.listener_to.set(pair[1]);
        let mut pidfd: RawFd = -1;
        let mut flags = libc::CLONE_VM | libc::CLONE_PIDFD | libc::SIGCHLD | flags;
        if let Some(sealed) = &self.sealed {
            if !LeasedView::seal_for_run(sealed) {
                // SAFETY: closing the pair made above.
                unsafe {
                    libc::close(pair[0]);
                    libc::close(pair[1]);
                }
                return false;
            }
            flags |= libc::CLONE_VFORK;
        }
        // SAFETY: the caller keeps `arg` and `stack` alive until the child is reaped below.
        let pid = unsafe {
            let top = stack.as_mut_ptr().add(stack.len() & !15).cast();
            libc::clone(entry, top, flags, arg, &mut pidfd as *mut RawFd)
        };
        // SAFETY: closing the child's end, which the child holds its own copy of.
        unsafe { libc::close(pair[1]) };
        let ok = pid > 0 && serve(pid, pidfd, pair[0], self.sealed.is_none());
        // SAFETY: ending (when anything failed) and reaping our child; closing our descriptors.
        unsafe {
            if pid > 0 {
                if !ok {
                    libc::kill(pid, libc::SIGKILL);
                }
                let mut status = 0;
                libc::waitpid(pid, &mut status, 0);
                libc::close(pidfd);
                libc::close(pair[0]);
                ok && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
            } else {
                libc::close(pair[0]);
                false
            }
        }
    }

    /// In the child, in its new pid namespace; false on the first step that fails.
    pub(crate) fn apply(&self) -> bool {
        // SAFETY: raw system calls on C strings, integers and descriptors owned here.
        unsafe {
            // A held view's second child is in the view already.
            if (self.held.is_none() && libc::setns(self.ns.as_raw_fd(), libc::CLONE_NEWNS) != 0)
                || libc::setns(self.ipc.as_raw_fd(), libc::CLONE_NEWIPC) != 0
            {
                return false;
            }
            let fresh = self.fresh.replace(false);
            if !fresh {
                for target in PER_RUN {
                    if libc::umount2(target.as_ptr(), libc::MNT_DETACH) != 0 {
                        return false;
                    }
                }
            }
            let mounted = libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                super::PROC_FLAGS,
                std::ptr::null(),
            ) == 0;
            if !mounted {
                return false;
            }
            if libc::setns(self.user.as_raw_fd(), libc::CLONE_NEWUSER) != 0 {
                return false;
            }
            super::no_capabilities() && self.restrict() && self.load_filter()
        }
    }

    /// Loads the filter; when supervised, with a listener, which goes to the caller.
    fn load_filter(&self) -> bool {
        let channel = self.listener_to.get();
        match sandbox::seccomp::install(&self.filter, channel >= 0) {
            Ok(None) => true,
            Ok(Some(listener)) => {
                // SAFETY: the listener was just made for us, and is closed here; the channel
                // is open until the child executes.
                let (listener, channel) = unsafe {
                    (
                        OwnedFd::from_raw_fd(listener),
                        BorrowedFd::borrow_raw(channel),
                    )
                };
                let sent = fdpass::send_one(channel, listener.as_fd()).is_ok();
                match &self.sealed {
                    // SAFETY: the caller is suspended (vfork) while the child reads its copy.
                    Some(s) => {
                        sent && sandbox::seccomp::install(unsafe { &*s.run_tail.as_ptr() }, false)
                            .is_ok()
                    }
                    None => sent,
                }
            }
            Err(_) => false,
        }
    }

    /// The view's Landlock rules, enforced; allocates nothing.
    fn restrict(&self) -> bool {
        let ruleset = raw::create_ruleset(self.handled);
        let mut ok = ruleset >= 0;
        for (fd, access) in &self.lasting {
            ok = ok && raw::add_rule(ruleset, fd.as_raw_fd(), *access);
        }
        for (path, access) in self.per_run {
            // SAFETY: open with a C string; the descriptor is closed below.
            let fd = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
            ok = ok && fd >= 0 && raw::add_rule(ruleset, fd, access);
            // SAFETY: closing descriptors opened here.
            unsafe { libc::close(fd) };
        }
        ok = ok && raw::restrict_self(ruleset);
        // SAFETY: closing the ruleset opened here.
        unsafe { libc::close(ruleset) };
        ok
    }
}

/// The caller's part of a supervised run: takes the listener from `channel`, lets the child's
/// first `execve` through (only the child's: the runner admits no other process's), then
/// serves the listener, refusing what it is sent, until the child has ended (its pidfd is
/// readable). Makes only system calls into stack buffers (the child shares this memory).
fn serve(pid: libc::pid_t, pidfd: RawFd, channel: RawFd, exec_answered: bool) -> bool {
    // SAFETY: our end of the channel, open until the caller closes it.
    let Ok(owned) = fdpass::recv_one(unsafe { BorrowedFd::borrow_raw(channel) }) else {
        return false;
    };
    let listener = owned.as_raw_fd();
    let (mut first, mut listening) = (exec_answered, true);
    loop {
        let mut fds = [
            libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                // A negative descriptor is left out of the poll.
                fd: if listening { listener } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: polling two live descriptors.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            break false;
        }
        if fds[1].revents & libc::POLLIN != 0 {
            // SAFETY: plain data, zeroed as the kernel requires, filled by RECV; SEND reads
            // our response.
            unsafe {
                let mut notif: libc::seccomp_notif = std::mem::zeroed();
                if libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif) != 0 {
                    continue;
                }
                let mut resp: libc::seccomp_notif_resp = std::mem::zeroed();
                resp.id = notif.id;
                let exec = notif.data.nr as libc::c_long == libc::SYS_execve;
                if first && exec && notif.pid as libc::pid_t == pid {
                    resp.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32;
                    first = false;
                } else {
                    resp.error = -libc::EPERM;
                }
                libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp);
            }
        } else if fds[0].revents != 0 {
            // Ended: a floor whose command never ran is not one.
            break !first;
        } else if fds[1].revents != 0 {
            // The listener hung up: every filtered process has ended; wait for the pidfd.
            listening = false;
        }
    }
}

/// Landlock's `LANDLOCK_ACCESS_FS_WRITE_FILE`, `TRUNCATE` (ABI 3) and `IOCTL_DEV` (ABI 5).
const WRITE_FILE: u64 = 1 << 1;
const TRUNCATE: u64 = 1 << 14;
const IOCTL_DEV: u64 = 1 << 15;

/// A sized tmpfs whose `tmp` and `shm` directories are attached at `/tmp` and `/dev/shm`, as
/// the strict scratch is.
fn scratch() -> bool {
    const MOUNT_ATTR: u32 = 0x2 | 0x4 | 0x8; // nosuid, nodev, noexec
    let options = [(c"mode", c"0755"), (c"size", c"1073741824")];
    let fs = raw::detached_tmpfs(&options, MOUNT_ATTR);
    if fs < 0 {
        return false;
    }
    let mut ok = true;
    for (dir, target) in [(c"tmp", c"/tmp"), (c"shm", c"/dev/shm")] {
        // SAFETY: mkdirat and fchmodat relative to our descriptor, with C strings.
        ok = ok
            && unsafe {
                libc::mkdirat(fs, dir.as_ptr(), 0o1777) == 0
                    && libc::fchmodat(fs, dir.as_ptr(), 0o1777, 0) == 0
            };
        let tree = if ok { raw::clone_tree(fs, dir, 0) } else { -1 };
        ok = tree >= 0 && raw::attach(tree, libc::AT_FDCWD, target);
        if tree >= 0 {
            // SAFETY: closing the copy made here.
            unsafe { libc::close(tree) };
        }
    }
    // SAFETY: closing the tmpfs made here; its two attached copies keep it.
    unsafe { libc::close(fs) };
    ok
}

/// A user namespace with `maps` written, as the runner lends one with each view namespace: made
/// by a forked helper, in the held user namespace `held` if given, which writes its own maps.
fn lent_user(held: Option<BorrowedFd<'_>>, maps: &[(CString, CString)]) -> Result<OwnedFd, String> {
    let mut ready = [0; 2];
    // SAFETY: pipe fills the array.
    if unsafe { libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_error("pipe"));
    }
    // SAFETY: the child makes raw system calls only, and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_error("fork"));
    }
    if pid == 0 {
        // SAFETY: system calls on C strings and our own descriptors, then waiting to be killed.
        unsafe {
            let made = held
                .is_none_or(|user| libc::setns(user.as_raw_fd(), libc::CLONE_NEWUSER) == 0)
                && libc::unshare(libc::CLONE_NEWUSER) == 0
                && super::write_maps(libc::open(c"/proc/self".as_ptr(), libc::O_PATH), maps);
            let byte = [u8::from(made)];
            libc::write(ready[1], byte.as_ptr().cast(), 1);
            libc::pause();
            libc::_exit(0);
        }
    }
    let mut byte = [0u8];
    // SAFETY: closing the helper's end, reading a byte into a local array.
    let made = unsafe {
        libc::close(ready[1]);
        let got = libc::read(ready[0], byte.as_mut_ptr().cast(), 1);
        libc::close(ready[0]);
        got == 1 && byte[0] == 1
    };
    let user = if made {
        std::fs::File::open(format!("/proc/{pid}/ns/user"))
            .map(OwnedFd::from)
            .map_err(|e| format!("the view's user namespace: {e}"))
    } else {
        Err("the view's user namespace could not be made".to_string())
    };
    // SAFETY: ending and reaping our helper; the namespace lives on through its descriptor.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    user
}

/// Runs `steps` in a helper process's private mount namespace on a tmpfs mounted at `root`,
/// makes that tmpfs the namespace's root with a devpts instance and a scratch, and returns the
/// namespace, its IPC namespace, its user namespace when `hold_user`, and descriptors of its
/// `/dev/pts`, `/dev/shm` and `/tmp`, or which step failed and why. The helper makes only
/// system calls on strings made here (it is forked from a process with threads).
fn build_namespace(
    root: &CStr,
    steps: &[Step],
    hold_user: bool,
) -> Result<(OwnedFd, OwnedFd, Option<OwnedFd>, [OwnedFd; 3]), String> {
    let (mut ready, mut up, mut down) = ([0; 2], [0; 2], [0; 2]);
    // SAFETY: pipe fills each array.
    if unsafe {
        libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) != 0
            || libc::pipe2(up.as_mut_ptr(), libc::O_CLOEXEC) != 0
            || libc::pipe2(down.as_mut_ptr(), libc::O_CLOEXEC) != 0
    } {
        return Err(os_error("pipe"));
    }
    // SAFETY: the child makes raw system calls only, and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_error("fork"));
    }
    if pid == 0 {
        // Held: a user namespace of the helper's own first, whose maps the parent writes,
        // so that the view's mount namespace belongs to it.
        let mut byte = [0u8; 1];
        // SAFETY: unshare, and a byte each way on our pipes.
        let owned = !hold_user
            || unsafe {
                libc::unshare(libc::CLONE_NEWUSER) == 0
                    && libc::write(up[1], byte.as_ptr().cast(), 1) == 1
                    && libc::read(down[0], byte.as_mut_ptr().cast(), 1) == 1
            };
        // The outcome as two integers: the failed step (-1: none) and its errno.
        let outcome = match if owned {
            helper(root, steps)
        } else {
            Err(steps.len())
        } {
            Ok(()) => [-1, 0],
            Err(failed) => [
                failed as i32,
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            ],
        };
        // SAFETY: writing a local array to our pipe, then waiting to be killed or leaving.
        unsafe {
            libc::write(
                ready[1],
                outcome.as_ptr().cast(),
                std::mem::size_of_val(&outcome),
            );
            if outcome[0] < 0 {
                libc::pause();
            }
            libc::_exit(0);
        }
    }
    // SAFETY: closing the helper's ends of the sync pipes.
    unsafe {
        libc::close(up[1]);
        libc::close(down[0]);
    }
    if hold_user {
        let mut byte = [0u8; 1];
        // SAFETY: a byte from the helper once its user namespace exists.
        let unshared = unsafe { libc::read(up[0], byte.as_mut_ptr().cast(), 1) } == 1;
        // SAFETY: getters without pointers.
        let ids = unsafe { (libc::geteuid(), libc::getegid()) };
        let mapped = unshared && crate::map_as_root(&pid.to_string(), ids);
        // SAFETY: a byte to the helper: its maps are written (or, on failure, its pipe's end
        // comes, and it reports a failed set-up).
        if mapped {
            unsafe { libc::write(down[1], byte.as_ptr().cast(), 1) };
        }
    }
    // SAFETY: closing our ends of the sync pipes.
    unsafe {
        libc::close(up[0]);
        libc::close(down[1]);
    }
    let mut outcome = [0i32; 2];
    // SAFETY: reading into a local array; closing our ends.
    let got = unsafe {
        libc::close(ready[1]);
        let got = libc::read(
            ready[0],
            outcome.as_mut_ptr().cast(),
            std::mem::size_of_val(&outcome),
        );
        libc::close(ready[0]);
        got
    };
    let ns = match outcome {
        _ if got != std::mem::size_of_val(&outcome) as isize => {
            Err("the view's helper ended without reporting".to_string())
        }
        [-1, _] => {
            let open = |ns: &str| {
                std::fs::File::open(format!("/proc/{pid}/ns/{ns}"))
                    .map(OwnedFd::from)
                    .map_err(|e| format!("the view's {ns} namespace: {e}"))
            };
            open("mnt").and_then(|mnt| {
                let user = if hold_user { Some(open("user")?) } else { None };
                // The runner holds its scratch's directories and its devpts instance's root.
                let dir = |path: &str| {
                    std::fs::File::open(format!("/proc/{pid}/root{path}"))
                        .map(OwnedFd::from)
                        .map_err(|e| format!("the view's {path}: {e}"))
                };
                let dirs = [dir("/dev/pts")?, dir("/dev/shm")?, dir("/tmp")?];
                Ok((mnt, open("ipc")?, user, dirs))
            })
        }
        [step, errno] => Err(format!(
            "building the view: {}: {}",
            describe(steps, step as usize),
            std::io::Error::from_raw_os_error(errno)
        )),
    };
    // SAFETY: ending and reaping our helper; the namespace lives on through its descriptor.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    ns
}

/// The step of [`helper`] numbered `i` (past the last: the namespace's own set-up, its
/// `pivot_root`, its devpts instance and its scratch), for an error message.
fn describe(steps: &[Step], i: usize) -> String {
    match steps.get(i) {
        Some(Step::Dir(p)) => format!("mkdir {p:?}"),
        Some(Step::Link { target, at }) => format!("symlink {at:?} -> {target:?}"),
        Some(Step::File(p)) => format!("create {p:?}"),
        Some(Step::Bind { from, at, .. }) => format!("bind {from:?} on {at:?}"),
        None => "the private mount and IPC namespaces, the tmpfs root, pivot_root, the devpts \
             instance or the scratch"
            .into(),
    }
}

/// The helper's part of [`build_namespace`]: `Err` holds the number of the step that failed
/// (`steps.len()` for the namespace's own set-up), with errno still set.
fn helper(root: &CStr, steps: &[Step]) -> Result<(), usize> {
    let null = std::ptr::null::<libc::c_char>();
    let nothing = std::ptr::null::<libc::c_void>();
    let own = steps.len();
    // SAFETY: raw system calls on the C strings of `steps` and constants, in the helper
    // process only (it changes its mount namespace and root).
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWIPC) != 0
            || libc::mount(
                null,
                c"/".as_ptr(),
                null,
                libc::MS_REC | libc::MS_PRIVATE,
                nothing,
            ) != 0
            || libc::mount(
                c"tmpfs".as_ptr(),
                root.as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                c"mode=0755".as_ptr().cast(),
            ) != 0
        {
            return Err(own);
        }
        for (i, step) in steps.iter().enumerate() {
            let ok = match step {
                Step::Dir(p) => {
                    libc::mkdir(p.as_ptr(), 0o755) == 0 || *libc::__errno_location() == libc::EEXIST
                }
                Step::Link { target, at } => libc::symlink(target.as_ptr(), at.as_ptr()) == 0,
                Step::File(p) => {
                    let fd = libc::open(p.as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o644);
                    fd >= 0 && libc::close(fd) == 0
                }
                Step::Bind { from, at, writable } => {
                    let flags = libc::MS_BIND | libc::MS_REC;
                    let bound = libc::mount(from.as_ptr(), at.as_ptr(), null, flags, nothing) == 0;
                    let ro = libc::MS_BIND
                        | libc::MS_REMOUNT
                        | libc::MS_RDONLY
                        | libc::MS_NOSUID
                        | libc::MS_NODEV;
                    bound && (*writable || libc::mount(null, at.as_ptr(), null, ro, nothing) == 0)
                }
            };
            if !ok {
                return Err(i);
            }
        }
        let pivoted = libc::chdir(root.as_ptr()) == 0
            && libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) == 0
            && libc::umount2(c".".as_ptr(), libc::MNT_DETACH) == 0
            && libc::chdir(c"/".as_ptr()) == 0
            // Lent with the view, as the runner's view namespaces lend theirs.
            && libc::mount(
                c"devpts".as_ptr(),
                c"/dev/pts".as_ptr(),
                c"devpts".as_ptr(),
                super::DEVPTS_FLAGS,
                super::DEVPTS_DATA.as_ptr().cast(),
            ) == 0
            && scratch();
        if pivoted {
            Ok(())
        } else {
            Err(own)
        }
    }
}
