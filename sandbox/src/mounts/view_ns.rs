//! Leased view mount namespaces: a template's view held in mount namespaces of the caller's
//! own, each lent to one run at a time.
//!
//! A copy of a template costs, per run, one clone of every mount it holds (about 1.7 µs per
//! declared root, measured), a copy of the caller's whole mount table at `CLONE_NEWNS`, the
//! `pivot_root` and detach of that table, and the teardown of all of it when the run ends. A
//! leased namespace pays those once, when it is made:
//!
//! 1. **Made outside any run.** A short-lived thread of the caller `unshare`s a mount
//!    namespace, attaches a copy of the template there and pivots into it: the namespace's root
//!    is the view, and it belongs to the caller's user namespace.
//! 2. **Joined by the run's child before it leaves that user namespace.** The child is cloned
//!    into a new pid namespace only, joins the leased namespace with `setns` (and the IPC
//!    namespace made with it, [`crate::ipcns`], whose leftovers keep it from the pool too),
//!    takes away what the previous run mounted there ([`ViewNs::enter`]), mounts its own
//!    scratch and `/proc` (the devpts instance at `/dev/pts` is the namespace's own, mounted
//!    when it is made, [`super::lent_pts`]), and only then leaves the caller's user namespace
//!    for the one made with the view namespace, which owns nothing ([`super::lent_user`]; where
//!    there is none, it `unshare`s one and writes its maps). The command therefore holds no
//!    capability over any mount of its view: it cannot mount, unmount or remount anything
//!    there, where a copy in its own namespace relied on the mounts being locked and its
//!    capabilities dropped.
//! 3. **One run at a time, and nothing left behind.** The runner gives a namespace back only
//!    after the run's pid 1 was reaped (the kernel ends every process of a pid namespace before
//!    its init finishes exiting), its child made all its mounts, and the run left its scratch
//!    exactly as it was made (the caller makes each run's scratch tmpfs and compares its inode
//!    and block counts after the run, [`Scratch`]), or the caller removed what the run left
//!    there and the counts are back to those ([`Scratch::emptied`]), and left its IPC namespace
//!    and devpts instance empty and unchanged; otherwise the namespace is closed, which frees
//!    everything the run wrote at once. A namespace waiting in the pool therefore holds no byte
//!    of an earlier run, only empty mounts, detached by the next run.
//! 4. **Roots inside the private `/tmp` are moved, not copied.** They hang below the run's own
//!    `/tmp`; the next run attaches its `/tmp` beneath the previous one (`MOVE_MOUNT_BENEATH`),
//!    moves each of the template's entries across, and only then detaches the old one.
//! 5. **Never stale.** The pool belongs to one template: a template that no longer holds (a
//!    root changed on disk, a host mount was made) is built again with an empty pool, and the
//!    old one's namespaces close with it.
//! 6. **A scratch no run touched is kept.** Where the tool's network is its own (no descriptor
//!    of the scratch can have left the run), a scratch the run did not touch at all
//!    ([`Scratch::untouched`]: nothing in it, its directories' modes, owners, times, extended
//!    attributes and flags as made, no inode made since, not even an unnamed one) stays in the
//!    namespace with its mounts, and the next run's child leaves them as they are: its `/tmp`
//!    and `/dev/shm` are what a new scratch would be, and no tmpfs is made, mounted, detached
//!    or torn down for it.
//!
//! What the previous run left is found by mount identity, not by trust: for each mount point of
//! a per-run mount the namespace records, when it is made, which mount its path shows (the
//! template's directory); a later run detaches whatever is stacked there until that mount shows
//! again, and refuses to run if it does not.
//!
//! A runner whose user namespace is not the initial one (root in a container) is refused a
//! `/proc` there: its pid namespace belongs to an ancestor's user namespace, and a procfs may
//! be mounted in a user namespace only where one is already fully visible. So a `/proc` is
//! tried once when a namespace is made, and while none can be made the template's runs copy
//! the view instead; a later run tries again after a back-off (1 s, doubled at each failure up
//! to 10 minutes), and `Prepared::view_lease` says why (`tests/view_template.rs` runs a runner
//! that is root in a user namespace of its own).
//!
//! A runner without `CAP_SYS_ADMIN` over its mount namespace makes its namespaces in the user
//! namespace that holds its template ([`super::held`]), and binds its own `/proc` at `/proc`
//! there, beneath each run's: in that user namespace a procfs may be mounted only where one is
//! fully visible already, so nothing is tried when the namespace is made.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use super::lent_pts::LentPts;
use super::lent_user::LentUser;
use super::template::{clone_entry, detached_tmpfs, TmpEntry};
use super::InodeStamp;
use super::{
    attach_tree, clone_tree, cstr, make_private, mount_devpts, mount_proc, move_tree, open_tree,
    os_err, pivot, sticky_dirs_at, MountOp, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID,
};

/// The most mounts one run leaves at one mount point (one); a few more are detached, for safety.
const MOST_STACKED: usize = 4;

/// What an invariant of the lease that failed means for the user.
const BUG: &str = "(a bug in toolpolicy's sandbox, never the tool's doing: the run is refused; \
                   please report it with the policy)";

/// `move_mount`: attach beneath the mount on top of the target.
const MOVE_MOUNT_BENEATH: libc::c_uint = 0x200;

/// What a namespace holds ([`ViewNs::state`]).
const FRESH: u8 = 0;
const BUSY: u8 = 1;
const READY: u8 = 2;

/// A mount namespace whose root is a template's view (see the module docs).
pub(crate) struct ViewNs {
    ns: OwnedFd,
    /// Each per-run mount point and the id of the mount its path shows in the namespace as it
    /// was made.
    pristine: Vec<(CString, u64)>,
    /// [`FRESH`]: as made; [`BUSY`]: a run's child is (or was, until it ended half-way) making
    /// its mounts; [`READY`]: the last run's child made all of them. Written by the child, which
    /// shares the caller's memory until `execve`.
    state: AtomicU8,
    /// The IPC namespace lent with it ([`crate::ipcns`]); `None` when none could be made (each
    /// run's child makes its own).
    ipc: Option<crate::ipcns::IpcNs>,
    /// The devpts instance mounted in it ([`super::lent_pts`]); `None` when its runs mount
    /// their own (no devpts in the view, or none could be mounted).
    pts: Option<Box<LentPts>>,
    /// The scratch of the last run, kept because that run never touched it
    /// ([`Scratch::untouched`]): its mounts are in place for the next run.
    kept: Option<Box<Scratch>>,
    /// The user namespace its runs' children join once their view is built
    /// ([`super::lent_user`]); `None` when none could be made (each makes its own).
    user: Option<LentUser>,
}

impl ViewNs {
    /// Makes a namespace holding a copy of the detached view `tree`; `per_run` are the mount
    /// points of the mounts each run makes (a procfs at `/proc` among them is tried here, see
    /// the module docs). Its runs' user namespace is added by [`ViewNs::with_user`].
    pub(crate) fn make(tree: &std::fs::File, per_run: &[&Path]) -> Result<ViewNs, String> {
        std::thread::scope(|s| {
            s.spawn(|| make_here(tree, per_run, ProcBeneath::Nothing))
                .join()
                .unwrap_or_else(|_| Err("the thread making a view namespace panicked".into()))
        })
    }

    /// [`ViewNs::make`] in the held user namespace `user` ([`super::held`]): the namespace
    /// belongs to it, and holds the runner's `/proc` beneath each run's own.
    pub(crate) fn make_held(
        user: &super::held::HeldUserNs,
        tree: &std::fs::File,
        per_run: &[&Path],
    ) -> Result<ViewNs, String> {
        let enter = super::held::Enter::Join {
            user: user.raw_fd(),
            mnt: None,
        };
        super::held::in_helper(enter, || make_here(tree, per_run, ProcBeneath::Runners))
    }

    /// Adds a user namespace for its runs ([`super::lent_user`]): `spare` (the user namespace
    /// of a namespace closed before, [`ViewNs::take_user`]) where it maps this process's ids,
    /// or else one made in `held` (the held user namespace, [`super::held`]) if given, or in
    /// the caller's; without one, each run's child makes its own.
    pub(crate) fn with_user(mut self, held: Option<RawFd>, spare: Option<LentUser>) -> ViewNs {
        // SAFETY: geteuid and getegid cannot fail.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        self.user = spare
            .filter(|user| user.serves(euid, egid))
            .or_else(|| LentUser::make(held, euid, egid).ok());
        self
    }

    /// Takes its user namespace, before it is closed, for the next one made
    /// ([`super::lent_user`]: no run leaves anything in it).
    pub(crate) fn take_user(&mut self) -> Option<LentUser> {
        self.user.take()
    }

    /// In the run's child, before it enters the namespace: how it will leave the caller's user
    /// namespace once its view is built. It joins the one the namespace lends a run of these
    /// ids ([`super::lent_user`]), or else makes its own, for which it opens its `/proc/<pid>`
    /// directory now, on the caller's procfs (the view's `/proc` is read-only).
    pub(crate) fn user_step(
        &self,
        euid: libc::uid_t,
        egid: libc::gid_t,
    ) -> Result<UserStep<'_>, String> {
        match self.user.as_ref().filter(|user| user.serves(euid, egid)) {
            Some(lent) => Ok(UserStep::Join(lent)),
            None => std::fs::File::open("/proc/self")
                .map(UserStep::Own)
                .map_err(|e| format!("open /proc/self: {e}")),
        }
    }

    /// Whether the namespace is as it was made: its run needs copies of the template's `/tmp`
    /// entries (later runs move the previous run's on).
    pub(crate) fn fresh(&self) -> bool {
        self.state.load(Ordering::Acquire) == FRESH
    }

    /// Whether the last run's child made all its mounts: only then may the namespace serve
    /// another run.
    pub(crate) fn ready(&self) -> bool {
        self.state.load(Ordering::Acquire) == READY
    }

    /// The root of the devpts instance it lends at `/dev/pts`, if any.
    pub(crate) fn pts_root(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.pts.as_deref().map(LentPts::root)
    }

    /// Whether the namespace carries an IPC namespace, which its runs' children join (their
    /// `clone` then makes none).
    pub(crate) fn lends_ipc(&self) -> bool {
        self.ipc.is_some()
    }

    /// Whether the last run left no System V object and no message queue in the IPC namespace
    /// lent with it, and no pty or changed `ptmx` in its devpts instance (true of each it does
    /// not lend): only then may the namespace serve another run.
    pub(crate) fn lent_parts_left_empty(&self) -> bool {
        self.ipc.as_ref().is_none_or(crate::ipcns::IpcNs::is_empty)
            && self.pts.as_deref().is_none_or(LentPts::is_empty)
    }

    /// Keeps `scratch`, whose mounts the last run left in place, for the next run.
    pub(crate) fn keep(&mut self, mut scratch: Scratch) {
        scratch.in_place = true;
        self.kept = Some(Box::new(scratch));
    }

    /// The scratch kept for this run ([`ViewNs::keep`]), if any.
    pub(crate) fn take_kept(&mut self) -> Option<Scratch> {
        self.kept.take().map(|scratch| *scratch)
    }

    /// The namespace's descriptor (closed in the child with the template's, before `execve`).
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.ns.as_raw_fd()
    }

    /// In the run's child: joins the namespace, detaches what the previous run mounted and makes
    /// this run's own mounts of `ops` (scratch, `/proc`, and devpts unless the namespace lends
    /// its own). `copies`: this run's copies of
    /// the template's `/tmp` entries, for a fresh namespace; `entries`: their names, under which
    /// a used namespace's previous run holds them, to be moved into this run's `/tmp`.
    pub(crate) fn enter(
        &self,
        ops: &[MountOp],
        scratch: Option<&Scratch>,
        copies: &[(PathBuf, std::fs::File)],
        entries: &[TmpEntry],
    ) -> Result<(), String> {
        let used = match self.state.swap(BUSY, Ordering::AcqRel) {
            FRESH => false,
            READY => true,
            _ => {
                return Err(format!(
                    "the view namespace was left half-made by an earlier run {BUG}"
                ))
            }
        };
        // SAFETY: setns on our own descriptor; the child does not share its filesystem context.
        if unsafe { libc::setns(self.ns.as_raw_fd(), libc::CLONE_NEWNS) } != 0 {
            return Err(os_err("join the view's mount namespace".into()));
        }
        if let Some(ipc) = &self.ipc {
            // SAFETY: setns on a descriptor the namespace holds, in this child alone.
            if unsafe { libc::setns(ipc.raw_fd(), libc::CLONE_NEWIPC) } != 0 {
                return Err(os_err("join the view's IPC namespace".into()));
            }
        }
        // The namespace's mount points exist: it was made with them.
        for op in ops {
            match op {
                MountOp::Proc => {
                    self.detach_all(c"/proc")?;
                    mount_proc(Path::new("/proc"))?;
                }
                // The namespace's own instance, given back empty, serves every run.
                MountOp::Devpts if self.pts.is_some() => {}
                MountOp::Devpts => {
                    self.detach_all(c"/dev/pts")?;
                    mount_devpts(Path::new("/dev/pts"))?;
                }
                _ => {}
            }
        }
        if let Some(scratch) = scratch {
            if scratch.in_place {
                // Kept from the run before, which left it untouched: its `/tmp` (with the
                // template's entries below it) and `/dev/shm` are the mounts in place.
                if !used {
                    return Err(format!(
                        "a scratch kept for a namespace no run has used {BUG}"
                    ));
                }
            } else if scratch.tmp {
                self.scratch_with_tmp(scratch, used, copies, entries)?;
            } else {
                let shm = scratch.bind(c"")?;
                self.detach_all(c"/dev/shm")?;
                attach_tree(&shm, Path::new("/dev/shm"))?;
            }
        }
        self.state.store(READY, Ordering::Release);
        Ok(())
    }

    /// The scratch tmpfs with a private `/tmp`: its `tmp` and `shm` directories, each bound
    /// where the tool sees it (the tmpfs's own root is in no view). The previous run's `/tmp`
    /// holds the template's entries below it: this run's `/tmp` is attached beneath it, the
    /// entries are moved into it, and only then is the old one detached, so no entry is ever
    /// cloned again.
    fn scratch_with_tmp(
        &self,
        scratch: &Scratch,
        used: bool,
        copies: &[(PathBuf, std::fs::File)],
        entries: &[TmpEntry],
    ) -> Result<(), String> {
        let (tmp, shm) = (scratch.bind(c"tmp")?, scratch.bind(c"shm")?);
        self.detach_all(c"/dev/shm")?;
        attach_tree(&shm, Path::new("/dev/shm"))?;
        let tmp_root = PathBuf::from(format!("/proc/self/fd/{}", tmp.as_raw_fd()));
        if !used {
            attach_tree(&tmp, Path::new("/tmp"))?;
            for (path, copy) in copies {
                let name = path.strip_prefix("/tmp").unwrap_or(path);
                attach_tree(copy, &tmp_root.join(name))?;
            }
            return Ok(());
        }
        let mut held = Vec::with_capacity(entries.len());
        let old_tmp = mount_id(c"/tmp")?;
        for TmpEntry { name, .. } in entries {
            let at = Path::new("/tmp").join(OsStr::from_bytes(name.to_bytes()));
            let c = cstr(&at)?;
            if mount_id(&c)? == old_tmp {
                return Err(format!(
                    "{} is no longer the template's entry {BUG}",
                    at.display()
                ));
            }
            held.push((name, open_mount(&c)?));
        }
        move_tree(&tmp, libc::AT_FDCWD, c"/tmp", MOVE_MOUNT_BENEATH)
            .map_err(|e| format!("attach this run's /tmp beneath the previous one: {e}"))?;
        for (name, entry) in &held {
            attach_tree(entry, &tmp_root.join(OsStr::from_bytes(name.to_bytes())))?;
        }
        detach_until(
            c"/tmp",
            mount_id_at(tmp.as_raw_fd(), c"", libc::AT_EMPTY_PATH)?,
        )
    }

    /// Detaches every mount at `path` until it shows what it showed when the namespace was made.
    fn detach_all(&self, path: &CStr) -> Result<(), String> {
        let Some((_, pristine)) = self.pristine.iter().find(|(p, _)| p.as_c_str() == path) else {
            return Err(format!(
                "{path:?} is not a per-run mount point of the view {BUG}"
            ));
        };
        detach_until(path, *pristine)
    }
}

/// How a run's child leaves the caller's user namespace ([`ViewNs::user_step`]).
pub(crate) enum UserStep<'a> {
    /// Joins the user namespace lent with the view namespace.
    Join(&'a LentUser),
    /// Makes its own and writes its maps through this `/proc/<pid>` directory of the child's.
    Own(std::fs::File),
}

impl UserStep<'_> {
    /// Takes the step, for a run of `euid` and `egid` (the maps of a user namespace of its own).
    pub(crate) fn take(self, euid: libc::uid_t, egid: libc::gid_t) -> Result<(), String> {
        match self {
            UserStep::Join(lent) => lent.join(),
            UserStep::Own(proc_self) => crate::child::own_user_namespace(&proc_self, euid, egid),
        }
    }
}

/// A run's scratch tmpfs (`/tmp` and `/dev/shm`, or `/dev/shm` alone), made by the caller with
/// its directories and the mount points of the template's `/tmp` entries, so that after the run
/// it can tell whether the run left anything in it: a namespace is lent again only when it did
/// not, and nothing a run wrote outlives the run in a namespace waiting in the pool.
///
/// A scratch the run never touched is kept with its namespace, its mounts in place, for the
/// next run ([`Scratch::untouched`]), where the tool's network is its own (see
/// [`crate::mounts::template::ViewCopy::give_back`]).
pub(crate) struct Scratch {
    fs: std::fs::File,
    tmp: bool,
    /// Inodes and blocks in use once made.
    made: (u64, u64),
    /// The directories the tool sees (`tmp` and `shm`, or the root), each with what it showed
    /// when made.
    visible: Vec<(OwnedFd, DirState)>,
    /// The inode number the last [`probe_inode`] got: the file system numbers its inodes in
    /// sequence, so the next probe gets the one after it unless the run made an inode. `None`
    /// when a probe failed: the scratch is then never kept.
    probe: Option<u64>,
    /// Whether this run's child finds the scratch's mounts in place: kept from the run before.
    pub(crate) in_place: bool,
}

/// What a directory of the scratch shows besides its entries: a run that changed any of it
/// (its mode, owner, times, extended attributes or inode flags) touched the scratch.
#[derive(PartialEq, Eq)]
struct DirState {
    stamp: InodeStamp,
    /// Its access time too: a listing of `/tmp` tells the next run that one happened.
    accessed: (i64, i64),
    marks: crate::scratch::Marks,
}

impl DirState {
    fn of(dir: &OwnedFd) -> Option<DirState> {
        use std::os::fd::AsFd;
        let (stamp, accessed) = InodeStamp::at(dir.as_raw_fd(), c"", libc::AT_EMPTY_PATH)?;
        Some(DirState {
            stamp,
            accessed,
            marks: crate::scratch::Marks::of(dir.as_fd()),
        })
    }
}

impl Scratch {
    /// A scratch of `size` bytes (noexec unless `exec`): with `tmp`, its `tmp` and `shm`
    /// directories and, in `tmp`, a mount point for each of `entries`.
    pub(crate) fn make(
        size: u64,
        tmp: bool,
        exec: bool,
        entries: &[TmpEntry],
    ) -> Result<Scratch, String> {
        let mut attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        if !exec {
            attrs |= MOUNT_ATTR_NOEXEC;
        }
        let mode = if tmp { c"0755" } else { c"1777" };
        let fs = detached_tmpfs(size, attrs, mode)?;
        if tmp {
            sticky_dirs_at(&fs)?;
            mount_points_at(&fs, entries)?;
        }
        let made = usage(&fs)?;
        let names: &[&CStr] = if tmp { &[c"tmp", c"shm"] } else { &[c"."] };
        let mut visible = Vec::with_capacity(names.len());
        for name in names {
            // SAFETY: openat relative to our own descriptor; the new descriptor is owned below.
            let fd = unsafe {
                libc::openat(
                    fs.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                )
            };
            if fd < 0 {
                return Err(os_err(format!("open the scratch's {name:?}")));
            }
            // SAFETY: a new descriptor owned here.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let state = DirState::of(&fd).ok_or_else(|| os_err(format!("stat {name:?}")))?;
            visible.push((fd, state));
        }
        let probe = probe_inode(&fs);
        Ok(Scratch {
            fs,
            tmp,
            made,
            visible,
            probe,
            in_place: false,
        })
    }

    /// The directory of the scratch that [`ViewNs::enter`] puts at `path`: `tmp` at `/tmp` and
    /// `shm` at `/dev/shm`, or, without a private `/tmp`, the root at `/dev/shm`.
    pub(crate) fn shown_at(&self, path: &Path) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd;
        let i = match (self.tmp, path.to_str()?) {
            (true, "/tmp") => 0,
            (true, "/dev/shm") => 1,
            (false, "/dev/shm") => 0,
            _ => return None,
        };
        Some(self.visible[i].0.as_fd())
    }

    /// Whether the run left the scratch as it was made: no file, directory or byte more.
    pub(crate) fn left_empty(&self) -> bool {
        usage(&self.fs).is_ok_and(|now| now == self.made)
    }

    /// Removes what the run left in the directories the tool sees, through the descriptors
    /// held since they were made, and says whether the scratch is then as made
    /// ([`Scratch::left_empty`]): the counts of the file system, not the walk, decide. Nothing
    /// is followed ([`crate::scratch::empty_dir_keeping`]), and the mount points of the
    /// template's `entries` in `tmp`, which no run reaches (each is under its entry's mount in
    /// the view), are kept. Called only once no process of the run is left.
    pub(crate) fn emptied(&self, entries: &[TmpEntry]) -> bool {
        use std::os::fd::AsFd;
        // Each file costs the walk a few system calls, where closing the namespace frees all
        // of them at once and costs the next run a new one (about 0.5 ms): past that many,
        // removing them would cost more.
        if usage(&self.fs).map_or(true, |(inodes, _)| inodes > self.made.0 + MOST_REMOVED) {
            return false;
        }
        let entry = |name: &CStr| entries.iter().any(|e| e.name.as_c_str() == name);
        let none = |_: &CStr| false;
        self.visible.iter().enumerate().all(|(i, (dir, _))| {
            // `tmp` (the first, where there is a private /tmp) holds the entries' mount points.
            let keep: &dyn Fn(&CStr) -> bool = if self.tmp && i == 0 { &entry } else { &none };
            crate::scratch::empty_dir_keeping(dir.as_fd(), keep).is_ok()
        }) && self.left_empty()
    }

    /// Whether the run did not touch the scratch at all, so that the next run may have it as
    /// it is: nothing more in it, each directory the tool sees as it was (mode, owner, times,
    /// extended attributes, inode flags), and no inode made since the last check, not even an
    /// unnamed one (`O_TMPFILE`), whose number a later file's would reveal. One check makes
    /// and frees an inode of its own, unseen by the tool.
    pub(crate) fn untouched(&mut self) -> bool {
        let same = self.left_empty()
            && self
                .visible
                .iter()
                .all(|(fd, made)| DirState::of(fd).is_some_and(|now| now == *made));
        let probe = probe_inode(&self.fs);
        let unmade = probe.is_some() && probe == self.probe.and_then(|p| p.checked_add(1));
        self.probe = probe;
        same && unmade
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fs.as_raw_fd()
    }

    /// A bind of the directory `dir` of the scratch (`""`: its root).
    fn bind(&self, dir: &CStr) -> Result<std::fs::File, String> {
        let copy = if dir.is_empty() {
            clone_tree(&self.fs)
        } else {
            clone_entry(&self.fs, dir)
        };
        copy.map_err(|e| format!("bind the scratch's {dir:?}: {e}"))
    }
}

/// The most files and directories a run may leave in its scratch for the runner to remove them
/// ([`Scratch::emptied`]) rather than close its namespace.
const MOST_REMOVED: u64 = 64;

/// In the new scratch `fs`, under its `tmp`, an empty directory or file for each of `entries`
/// to be attached on (named from the descriptors, as [`sticky_dirs_at`] does).
fn mount_points_at(fs: &std::fs::File, entries: &[TmpEntry]) -> Result<(), String> {
    if entries.is_empty() {
        return Ok(());
    }
    // SAFETY: openat relative to our own descriptor; the new descriptor is owned below.
    let tmp = unsafe {
        libc::openat(
            fs.as_raw_fd(),
            c"tmp".as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
        )
    };
    if tmp < 0 {
        return Err(os_err("open the scratch's tmp".into()));
    }
    // SAFETY: a new descriptor owned here.
    let tmp = unsafe { OwnedFd::from_raw_fd(tmp) };
    for TmpEntry { name, dir } in entries {
        // SAFETY: mkdirat and mknodat relative to our own descriptor, with a C string.
        let rc = unsafe {
            if *dir {
                libc::mkdirat(tmp.as_raw_fd(), name.as_ptr(), 0o755)
            } else {
                libc::mknodat(tmp.as_raw_fd(), name.as_ptr(), libc::S_IFREG | 0o644, 0)
            }
        };
        if rc != 0 {
            return Err(os_err(format!(
                "make the scratch's mount point tmp/{name:?}"
            )));
        }
    }
    Ok(())
}

/// The inode number of an unnamed file made and closed at once in the root of `fs`.
fn probe_inode(fs: &std::fs::File) -> Option<u64> {
    // SAFETY: openat relative to our own descriptor; fstat into a zeroed struct; the new
    // descriptor is owned below.
    unsafe {
        let fd = libc::openat(
            fs.as_raw_fd(),
            c".".as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
        );
        if fd < 0 {
            return None;
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd.as_raw_fd(), &mut st) == 0).then_some(st.st_ino)
    }
}

/// Inodes and blocks in use on the filesystem of `fs`.
fn usage(fs: &std::fs::File) -> Result<(u64, u64), String> {
    // SAFETY: fstatfs fills a zeroed struct for our descriptor.
    let st = unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::fstatfs(fs.as_raw_fd(), &mut st) != 0 {
            return Err(os_err("fstatfs the scratch".into()));
        }
        st
    };
    Ok((
        (st.f_files - st.f_ffree) as u64,
        (st.f_blocks - st.f_bfree) as u64,
    ))
}

/// Detaches the mounts on top at `path` until it shows the mount `want` (at most
/// [`MOST_STACKED`] of them).
fn detach_until(path: &CStr, want: u64) -> Result<(), String> {
    for _ in 0..MOST_STACKED {
        if mount_id(path)? == want {
            return Ok(());
        }
        detach(path)?;
    }
    if mount_id(path)? == want {
        return Ok(());
    }
    Err(format!(
        "{} still shows an earlier run's mount after {MOST_STACKED} detaches {BUG}",
        path.to_string_lossy()
    ))
}

/// Detaches the mount on top at `path`.
fn detach(path: &CStr) -> Result<(), String> {
    // SAFETY: a C string; detaching a mount of this namespace.
    if unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(os_err(format!(
            "detach an earlier run's mount at {}",
            path.to_string_lossy()
        )));
    }
    Ok(())
}

/// A descriptor of the mount at `path` itself (not a copy), to move it.
fn open_mount(path: &CStr) -> Result<std::fs::File, String> {
    open_tree(
        libc::AT_FDCWD,
        path,
        libc::AT_SYMLINK_NOFOLLOW as libc::c_uint,
    )
    .map_err(|e| format!("open the mount at {}: {e}", path.to_string_lossy()))
}

/// [`ViewNs::make`] on the thread that becomes the namespace's only member, and leaves it.
/// What a view namespace holds at `/proc` beneath each run's own procfs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ProcBeneath {
    /// The template's empty directory: a root runner's runs may mount a procfs on it, which
    /// [`make_here`] tries once.
    Nothing,
    /// A recursive bind of the runner's `/proc`: in a held user namespace a procfs may be
    /// mounted only where one is fully visible already (see [`super::held`]).
    Runners,
}

fn make_here(
    tree: &std::fs::File,
    per_run: &[&Path],
    beneath: ProcBeneath,
) -> Result<ViewNs, String> {
    // This thread's own mount namespace (and filesystem context).
    let ns = crate::netns::unshare_own(libc::CLONE_NEWNS, "mnt")?;
    // Before the pivot, while the runner's `/proc` is still here to open the namespace's
    // `sysvipc` files. Without it, each run's child makes its own.
    let ipc = crate::ipcns::IpcNs::unshare_here().ok();
    make_private()?;
    let copy = clone_tree(tree).map_err(|e| format!("copy the view template: {e}"))?;
    let staging = Path::new("/tmp");
    attach_tree(&copy, staging)?;
    let proc = per_run.contains(&Path::new("/proc"));
    if proc && beneath == ProcBeneath::Runners {
        let runners = open_tree(
            libc::AT_FDCWD,
            c"/proc",
            super::OPEN_TREE_CLONE | super::AT_RECURSIVE,
        )
        .map_err(|e| format!("bind the runner's /proc in a held view namespace: {e}"))?;
        attach_tree(&runners, &staging.join("proc"))?;
    }
    pivot(staging)?;
    if proc && beneath == ProcBeneath::Nothing {
        try_proc()?;
    }
    let mut pristine = Vec::with_capacity(per_run.len());
    for path in per_run {
        let c = cstr(path)?;
        let id = mount_id(&c)?;
        pristine.push((c, id));
    }
    // Without it, each run's child mounts its own.
    let pts = per_run
        .contains(&Path::new("/dev/pts"))
        .then(LentPts::mount_here)
        .and_then(Result::ok)
        .map(Box::new);
    Ok(ViewNs {
        ns,
        pristine,
        state: AtomicU8::new(FRESH),
        ipc,
        pts,
        kept: None,
        user: None,
    })
}

/// Mounts a procfs at `/proc` and detaches it: whether a run's child will be allowed to.
fn try_proc() -> Result<(), String> {
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY;
    // SAFETY: C strings; the mount is detached at once.
    unsafe {
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            flags,
            std::ptr::null(),
        ) != 0
        {
            return Err(os_err("mount a procfs in a view namespace".into()));
        }
        if libc::umount2(c"/proc".as_ptr(), libc::MNT_DETACH) != 0 {
            return Err(os_err("detach the trial procfs".into()));
        }
    }
    Ok(())
}

/// The id of the mount that `path` shows (the topmost one at a mount point).
fn mount_id(path: &CStr) -> Result<u64, String> {
    mount_id_at(libc::AT_FDCWD, path, 0)
}

/// [`mount_id`] of `path` from `dir` (with `flags`, e.g. `AT_EMPTY_PATH` for `dir` itself).
fn mount_id_at(dir: RawFd, path: &CStr, flags: libc::c_int) -> Result<u64, String> {
    // SAFETY: statx fills a zeroed struct; a C string.
    let (rc, stx) = unsafe {
        let mut stx: libc::statx = std::mem::zeroed();
        let rc = libc::statx(
            dir,
            path.as_ptr(),
            flags | libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT,
            libc::STATX_MNT_ID,
            &mut stx,
        );
        (rc, stx)
    };
    if rc != 0 {
        return Err(os_err(format!("statx {}", path.to_string_lossy())));
    }
    if stx.stx_mask & libc::STATX_MNT_ID == 0 {
        return Err(format!(
            "the kernel gave no mount id for {}",
            path.to_string_lossy()
        ));
    }
    Ok(stx.stx_mnt_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch with a private `/tmp`, or `None` (after saying why) where this process may
    /// not make a file system (not root).
    fn made() -> Option<Scratch> {
        crate::test_kernel::made_as_root(Scratch::make(1 << 20, true, false, &[]), "a scratch")
    }

    /// The scratch's visible directory `i` (0: `tmp`, 1: `shm`).
    fn dir(s: &Scratch, i: usize) -> RawFd {
        s.visible[i].0.as_raw_fd()
    }

    /// Makes the file `x` in the directory `at` and removes it.
    fn made_and_removed(at: RawFd) {
        // SAFETY: openat/unlinkat relative to our own descriptor, with C strings.
        unsafe {
            let fd = libc::openat(at, c"x".as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o600);
            assert!(fd >= 0);
            libc::close(fd);
            assert_eq!(libc::unlinkat(at, c"x".as_ptr(), 0), 0);
        }
    }

    #[test]
    fn a_scratch_stays_untouched_until_a_run_changes_anything_the_tool_sees() {
        let Some(mut s) = made() else { return };
        assert!(s.untouched(), "as made");
        assert!(
            s.untouched(),
            "a second check (the probe's inode counts as its own)"
        );
        // Each change below, on a scratch of its own, is one a run could leave for the next.
        type Change = fn(&Scratch);
        let changes: [(&str, Change); 7] = [
            ("a file made and removed in tmp", |s| {
                made_and_removed(dir(s, 0))
            }),
            ("a file made and removed in shm", |s| {
                made_and_removed(dir(s, 1))
            }),
            (
                "an unnamed file (O_TMPFILE), which changes no directory",
                |s| {
                    // SAFETY: openat relative to our own descriptor; closed at once.
                    unsafe {
                        let fd = libc::openat(
                            dir(s, 0),
                            c".".as_ptr(),
                            libc::O_TMPFILE | libc::O_RDWR,
                            0o600,
                        );
                        assert!(fd >= 0, "{}", std::io::Error::last_os_error());
                        libc::close(fd);
                    }
                },
            ),
            ("an extended attribute", |s| {
                // SAFETY: fsetxattr on our own descriptor with a live buffer.
                let rc = unsafe {
                    libc::fsetxattr(dir(s, 0), c"user.left".as_ptr(), c"x".as_ptr().cast(), 1, 0)
                };
                assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
            }),
            ("a mode", |s| {
                // SAFETY: fchmod on our own descriptor.
                assert_eq!(unsafe { libc::fchmod(dir(s, 1), 0o1770) }, 0);
            }),
            ("a modification time", |s| {
                super::super::set_mtime_at(dir(s, 0), c"", 1000)
            }),
            ("a listing, after the clock moved (its access time)", |s| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                let mut buf = [0u64; 64];
                // SAFETY: getdents64 into our own buffer, of its size in bytes.
                let n = unsafe {
                    libc::syscall(libc::SYS_getdents64, dir(s, 0), buf.as_mut_ptr(), 512)
                };
                assert!(n > 0);
            }),
        ];
        for (what, change) in changes {
            let Some(mut s) = made() else { return };
            change(&s);
            assert!(!s.untouched(), "{what} is seen");
        }
    }
}
