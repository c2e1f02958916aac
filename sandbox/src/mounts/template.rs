//! The strict view built once per prepared policy, copied per run.
//!
//! Building a view from scratch costs, per run, one `openat2` + clone + `mkdir` + `move_mount`
//! per declared root and about twenty binds of system paths and device nodes. A *template* is
//! the same view's `/` built once, in the caller, as a detached mount tree: a tmpfs of its own
//! (`fsopen`/`fsmount`), holding every host bind of the plan ([`MountOp::Bind`],
//! [`MountOp::Keep`], with the same flags and refusal rules as [`super::enter`]), the copied
//! host links, the `/dev` tmpfs with its device binds and links, and the mount points of the
//! per-run mounts. Each run is lent a mount namespace of the caller's whose root is a copy of
//! that tree (`super::view_ns`, one run at a time): its child joins it, takes away the
//! previous run's mounts and adds only what is its own: the scratch tmpfs (`/tmp`, `/dev/shm`;
//! or it keeps the last run's, which that run never touched, `super::view_ns`) and a fresh
//! `/proc` (the namespace's devpts instance is lent with it, `super::lent_pts`). Where no such
//! namespace can be made, each run clones the whole tree in one
//! `open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)` call before its `clone`, and the child moves the
//! copy into place in a namespace of its own ([`super::enter_copy`]).
//!
//! **Never writable.** The template's own tmpfs superblocks are shared by every run's copy, so
//! every one of its own mounts is read-only before the first copy is made, and a copy carries
//! the flag; the tool holds no capability to change it. All of it is `MS_PRIVATE`.
//!
//! **Revalidated before every run.** A template holds the inodes its paths named when it was
//! built, and so do its leased namespaces. Before each run its `Fingerprint` must hold (every
//! bind source still names, without a symlink, the inode it was built from, and every missing
//! optional path is still missing) and the caller's mount table must not have changed since
//! the build (a host mount made over or under a root is not in the template's recursive
//! clone); otherwise the template is built again (its namespaces close with the old one), and
//! when that build fails the run takes the per-run path, which refuses as a fresh build does
//! (and the plan's runs take it without trying again until a back-off has passed).
//!
//! **Who gets it** ([`ViewBuild`], decided once per prepared policy): any runner on a kernel
//! that attaches mounts inside a detached tree, for a plan that places no resolver files and
//! whose per-run mounts hide no host bind made after them. Binds inside the private `/tmp` are
//! the exception: they sit in a second tree whose top entries each run clones and attaches in
//! its scratch, so a directory made on the way to such a root is the template's, read-only. A
//! caller with `CAP_SYS_ADMIN` over its mount namespace (a root runner) builds the template
//! where it is ([`ViewBuild::Template`]); any other builds it in a user namespace it makes for
//! it ([`ViewBuild::HeldTemplate`], `sandbox/src/mounts/held.rs`), whose runs are only ever
//! lent a namespace (a run that gets none builds its view itself).
//!
//! The Landlock rules of bound paths are made from the descriptors the build opened (a rule
//! holds the inode, which every copy shows at the same path): no per-run `open`, and the
//! `path -> descriptor` lookup stays [`BoundSources::get`]. Everyone else builds the same view
//! per run, unchanged.
//!
//! **Fork-safe** like the hardened slots: the templates are the process's own
//! (`crate::per_process`); a forked child builds its own.

use crate::landlock_rules::PathRule;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::held::HeldUserNs;
use super::lent_user::LentUser;
use super::view_ns::{Scratch, ViewNs};
use super::{
    attach_bind, attach_tree, bind_source, copy_link, cstr, mkdir_p, on_own_filesystem, under,
    BoundSources, MountAttr, MountOp, AT_RECURSIVE, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC,
    MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY,
};
use crate::fingerprint::Fingerprint;
use crate::per_process::PerProcess;
use std::sync::Mutex;

/// How a prepared strict policy's view is built at each run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ViewBuild {
    /// Copied from a template built once per policy (revalidated before each run).
    Template,
    /// Copied from a template built once per policy, as [`ViewBuild::Template`], in a user
    /// namespace the runner makes for it: the runner lacks `CAP_SYS_ADMIN` over its mount
    /// namespace (it is not root, or it is root in a user namespace that does not own its
    /// mount namespace). Its runs are lent a view namespace of that user namespace; when none
    /// can be had, or with [`ViewSource::Copied`], a run builds its view itself.
    HeldTemplate,
    /// Built from scratch in each run's child, for the reason given.
    PerRun(PerRunWhy),
}

/// Where a run copied from a template takes its view ([`crate::RunOptions::view_source`]).
///
/// ```
/// use sandbox::mounts::template::ViewSource;
/// use sandbox::{Profile, RunOptions};
///
/// // Every run in a mount namespace of its own, which ends with the run.
/// let opts = RunOptions::default()
///     .profile(Profile::Strict)
///     .view_source(ViewSource::Copied);
/// assert_eq!(opts.view_source, ViewSource::Copied);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ViewSource {
    /// A mount namespace of the runner's that holds the view, lent to one run at a time
    /// (`mounts/view_ns.rs`), whenever one can be made; otherwise [`ViewSource::Copied`] (for
    /// a [`ViewBuild::HeldTemplate`], whose tree the runner cannot copy, the run builds its
    /// view itself).
    #[default]
    Leased,
    /// A copy of the template cloned per run into a mount namespace of the run's own: every
    /// mount of the run is freed when it ends, at the cost of cloning the view's mounts (about
    /// 1.7 µs per declared root). A [`ViewBuild::HeldTemplate`]'s runs build their view
    /// themselves instead.
    Copied,
}

/// Why a prepared strict policy builds its view per run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PerRunWhy {
    /// The plan places resolver files, which are bound over entries found in the view.
    ResolverFiles,
    /// A host bind at this path lies inside (or over) a mount made per run before it, such as
    /// a declared root inside the private `/tmp`.
    InsidePerRunMount(PathBuf),
}

/// Whether the caller holds `CAP_SYS_ADMIN` over the user namespace that owns its mount
/// namespace, which building a template takes. Asked of the kernel, which checks exactly that
/// when a file system context is opened (no file system is made): `CAP_SYS_ADMIN` in the
/// caller's own user namespace is not enough where an ancestor's owns its mounts (a runner
/// that entered a user namespace without a mount namespace of its own).
fn may_mount_here() -> bool {
    // SAFETY: fsopen with a C string; the descriptor, when there is one, is closed at once.
    let context = unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), 1u32) };
    if context < 0 {
        return false;
    }
    // SAFETY: closing the descriptor just made.
    unsafe { libc::close(context as i32) };
    true
}

/// Whether `op` is one of the mounts every run makes for itself.
fn is_per_run(op: &MountOp) -> bool {
    matches!(
        op,
        MountOp::Scratch { .. } | MountOp::Devpts | MountOp::Proc
    )
}

/// Where a per-run mount lies in the view.
fn per_run_targets(op: &MountOp) -> &'static [&'static str] {
    match op {
        MountOp::Scratch { tmp: true, .. } => &["/tmp", "/dev/shm"],
        MountOp::Scratch { tmp: false, .. } => &["/dev/shm"],
        MountOp::Devpts => &["/dev/pts", "/dev/ptmx"],
        MountOp::Proc => &["/proc"],
        _ => &[],
    }
}

/// Decides, once per prepared plan, how its view is built (see the module docs).
pub fn decide(ops: &[MountOp]) -> ViewBuild {
    if ops.iter().any(|op| matches!(op, MountOp::File { .. })) {
        return ViewBuild::PerRun(PerRunWhy::ResolverFiles);
    }
    // A template applies its own steps first and the per-run mounts after: that is the plan's
    // order unless a step after a per-run mount lies inside it or over it.
    // The one exception: host binds (and links below them) inside the private `/tmp` go to the
    // template's `/tmp` tree, attached in the run's scratch after it is mounted.
    for (i, op) in ops.iter().enumerate().filter(|(_, op)| is_per_run(op)) {
        for later in ops[i + 1..].iter().filter(|op| !is_per_run(op)) {
            let at = later.target();
            let in_tmp_tree = matches!(op, MountOp::Scratch { tmp: true, .. })
                && in_tmp(at)
                && match later {
                    MountOp::Bind { .. } | MountOp::Keep { .. } => true,
                    MountOp::Symlink { path, .. } => path.parent() != Some(Path::new("/tmp")),
                    _ => false,
                };
            if in_tmp_tree {
                continue;
            }
            if per_run_targets(op)
                .iter()
                .any(|t| at.starts_with(t) || Path::new(t).starts_with(at))
            {
                return ViewBuild::PerRun(PerRunWhy::InsidePerRunMount(at.to_path_buf()));
            }
        }
    }
    if may_mount_here() {
        ViewBuild::Template
    } else {
        ViewBuild::HeldTemplate
    }
}

/// Whether `path` lies strictly inside `/tmp`.
fn in_tmp(path: &Path) -> bool {
    path.strip_prefix("/tmp")
        .is_ok_and(|rest| !rest.as_os_str().is_empty())
}

/// Sees whether the calling thread's mount table changed since it was opened: the kernel
/// raises `POLLPRI` on `mountinfo` at every mount, unmount or move in the namespace. The
/// thread's, not the process's (`/proc/self` is its first thread's): a thread may have a mount
/// namespace of its own.
struct MountWatch(std::fs::File);

impl MountWatch {
    fn open() -> Result<MountWatch, String> {
        std::fs::File::open("/proc/thread-self/mountinfo")
            .map(MountWatch)
            .map_err(|e| format!("open /proc/thread-self/mountinfo: {e}"))
    }

    fn changed(&self) -> bool {
        let mut p = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLPRI,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        n != 0
    }
}

/// A view's `/` built once, with what it was built from.
pub(crate) struct Template {
    tree: std::fs::File,
    /// What the plan binds inside the private `/tmp`, as a tree of its own whose root stands
    /// for `/tmp`, and the names of its entries: each is cloned per run and attached in the
    /// run's scratch.
    tmp_tree: std::fs::File,
    tmp_entries: Vec<TmpEntry>,
    bound: BoundSources,
    fingerprint: Fingerprint,
    mounts: MountWatch,
    /// The building thread's root ([`super::thread_root`]): a thread whose root is another
    /// (it entered another mount namespace or changed its root) sees another mount table, which
    /// this template's binds do not show.
    root: Option<(u64, u64, u64)>,
    /// The mount points of the per-run mounts.
    per_run: Vec<&'static Path>,
    /// Namespaces holding this view, each free for one run ([`super::view_ns`]).
    idle: Mutex<Vec<ViewNs>>,
    /// Why the last namespace could not be made, and when to try again: until then the runs
    /// copy the tree instead.
    refused: Mutex<Option<Refused>>,
    /// The descriptors above, as runs of consecutive numbers: a run's child closes each run
    /// in one call ([`ViewCopy::close_in_child`]).
    fd_runs: Vec<(u32, u32)>,
    /// The user namespace the template and its namespaces were made in, for a runner without
    /// `CAP_SYS_ADMIN` over its mount namespace ([`super::held`]).
    held: Option<HeldUserNs>,
    /// Empty network namespaces of the held user namespace, each free for one run
    /// ([`crate::netns::NetnsSource::Held`]).
    idle_net: Mutex<Vec<crate::netns::Empty>>,
    /// The user namespaces of view namespaces closed after a run, for the next ones made: no
    /// run leaves anything in one ([`super::lent_user`]).
    spare_users: Mutex<Vec<LentUser>>,
}

/// The last failure to make a view namespace ([`Template::lease`]), or a plan's template
/// ([`copy`]).
struct Refused {
    why: String,
    back_off: std::time::Duration,
    retry_at: std::time::Instant,
}

/// How long a template's runs copy its view after its first failure to make a namespace; each
/// failure after doubles it, up to [`MAX_BACK_OFF`].
const FIRST_BACK_OFF: std::time::Duration = std::time::Duration::from_secs(1);
const MAX_BACK_OFF: std::time::Duration = std::time::Duration::from_secs(600);

impl Refused {
    /// The record of a failure for `why` that follows `last` (the previous failure's, if no
    /// attempt succeeded since): its back-off is [`FIRST_BACK_OFF`], or `last`'s doubled up to
    /// [`MAX_BACK_OFF`].
    fn after(last: Option<&Refused>, why: String) -> Refused {
        let back_off = last.map_or(FIRST_BACK_OFF, |r| (r.back_off * 2).min(MAX_BACK_OFF));
        Refused {
            why,
            back_off,
            retry_at: std::time::Instant::now() + back_off,
        }
    }

    /// Whether an attempt made now must wait for the back-off.
    fn waits(&self) -> bool {
        std::time::Instant::now() < self.retry_at
    }
}

/// Whether the runs of a prepared strict policy are lent a namespace that holds its view
/// ([`ViewSource::Leased`], [`crate::runner::Prepared::view_lease`]), as far as its runs found
/// out so far.
///
/// ```no_run
/// use sandbox::mounts::template::ViewLease;
/// use sandbox::runner::{prepared_for, run, RunOptions};
/// use sandbox::Profile;
///
/// let policy = policy_runtime::ToolPolicy::from_json_str("tool", r#"{"fs": {"read": ["/srv/**"]}}"#)?;
/// let (argv, opts) = (["/bin/true".into()], RunOptions::default().profile(Profile::Strict));
/// run(&policy, &argv, &opts)?;
/// if let Some(ViewLease::Refused(why)) = prepared_for(&policy, &argv, &opts)?.view_lease() {
///     eprintln!("each run copies its view: no view namespace can be made here: {why}");
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ViewLease {
    /// No run has built the policy's template yet (or it was let go, or built again since,
    /// or its last build failed: its runs then build their view themselves, and a later run
    /// builds the template again after the same back-off as [`ViewLease::Refused`]).
    NotBuilt,
    /// Runs are lent a namespace (or will be, at the first that asks for one).
    Lending,
    /// The last namespace could not be made, for the reason given: runs copy the view into a
    /// namespace of their own meanwhile ([`ViewSource::Copied`]; a held template's build it
    /// themselves), and a later run tries again after a back-off (1 s, doubled at each failure
    /// up to 10 minutes).
    Refused(String),
}

/// [`ViewLease`] of the template of the plan `key`.
pub(crate) fn lease_status(key: u64) -> ViewLease {
    let template = TEMPLATES.lock(|| {}).get(&key).cloned();
    template.map_or(ViewLease::NotBuilt, |t| t.lease_status())
}

/// A top entry of the template's `/tmp` tree.
pub(crate) struct TmpEntry {
    pub(crate) name: CString,
    /// A directory (else a file: a root bound alone).
    pub(crate) dir: bool,
}

/// The most idle view namespaces one template keeps: one per run that was running at once.
const MAX_IDLE: usize = 8;

impl Template {
    /// Keeps the bind descriptors of the paths `keep` names, and closes the others: the runs
    /// of descriptors a child closes are made again from what is left.
    fn keep_bound(&mut self, keep: impl Fn(&Path) -> bool) {
        self.bound.retain(keep);
        let own = [&self.tree, &self.tmp_tree, &self.mounts.0].map(|f| f.as_raw_fd());
        let held = self.held.as_ref().map(HeldUserNs::raw_fd);
        self.fd_runs = consecutive(own.into_iter().chain(held).chain(self.bound.raw_fds()));
    }

    /// Whether a fresh build would make the same tree.
    fn holds(&self) -> bool {
        self.root.is_some()
            && super::thread_root() == self.root
            && !self.mounts.changed()
            && self.fingerprint.holds()
    }

    /// The descriptors this template may hold: one per bind, its trees and watch, and its
    /// idle namespaces.
    fn fds(&self) -> usize {
        // An idle view namespace holds up to eleven: its own, its IPC namespace's, that one's
        // three `sysvipc` files and its message queues' file system, its devpts instance's
        // root, a kept scratch's file system and two directories, and its user namespace's;
        // an idle network namespace two: its own and its socket count's; a spare user
        // namespace one.
        self.bound.len() + 4 + 14 * MAX_IDLE
    }

    /// An empty network namespace of the held user namespace for one run: an idle one, or a
    /// new one; `None` when none can be made (the run's child makes its own).
    fn lease_net(&self, user: &HeldUserNs) -> Option<crate::netns::Empty> {
        let idle = self
            .idle_net
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        idle.or_else(|| crate::netns::Empty::make_held(user).ok())
    }

    /// A namespace of this view for one run: an idle one, or a new one; `None` when none can
    /// be made here, or when the last attempt failed less than its back-off ago (a refusal
    /// that lasts, such as a `/proc` the kernel will not mount, then costs one attempt per
    /// [`MAX_BACK_OFF`]; one that passes, such as a lack of memory or descriptors, ends).
    fn lease(&self) -> Option<ViewNs> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        if idle.is_some() {
            return idle;
        }
        let refused = || self.refused.lock().unwrap_or_else(|e| e.into_inner());
        if refused().as_ref().is_some_and(Refused::waits) {
            return None;
        }
        // Made without the lock held: runs that start together make theirs side by side.
        let made = match &self.held {
            None => ViewNs::make(&self.tree, &self.per_run),
            Some(user) => ViewNs::make_held(user, &self.tree, &self.per_run),
        };
        let mut refused = refused();
        match made {
            Ok(ns) => {
                *refused = None;
                drop(refused);
                // Only now: a namespace that could not be made takes no spare with it.
                let spare = self.spare_users().pop();
                Some(ns.with_user(self.held.as_ref().map(HeldUserNs::raw_fd), spare))
            }
            Err(why) => {
                *refused = Some(Refused::after(refused.as_ref(), why));
                None
            }
        }
    }

    /// The user namespaces kept for the next view namespaces made.
    fn spare_users(&self) -> std::sync::MutexGuard<'_, Vec<LentUser>> {
        self.spare_users.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the view namespace `ns` and keeps its user namespace, which holds nothing of a
    /// run, for the next one made (up to [`MAX_IDLE`]).
    fn keep_user_of(&self, mut ns: ViewNs) {
        if let Some(user) = ns.take_user() {
            let mut spare = self.spare_users();
            if spare.len() < MAX_IDLE {
                spare.push(user);
            }
        }
    }

    /// Whether this template's runs are lent namespaces.
    fn lease_status(&self) -> ViewLease {
        match &*self.refused.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(r) => ViewLease::Refused(r.why.clone()),
            None => ViewLease::Lending,
        }
    }
}

/// A run's copies of the template's `/tmp` entries, by their path in the view.
pub(crate) type TmpCopies = Vec<(PathBuf, std::fs::File)>;

/// One run's copy of a template, made in the caller before the child's `clone`; its
/// descriptors are closed when this drops, after the run, unless it is given back.
pub(crate) struct ViewCopy {
    pub(crate) root: CopyRoot,
    /// Copies of the entries of the template's `/tmp` tree, by their path in the view.
    pub(crate) tmp: TmpCopies,
    template: Arc<Template>,
    /// A held template's network namespace lent to the run with its view namespace.
    net: Option<crate::netns::Empty>,
    /// Whether an untouched scratch may be kept for the next run: only where the tool's
    /// network namespace is its own and its `connect` is supervised, so that no descriptor of
    /// the scratch can have left the run (see [`ViewCopy::give_back`]).
    keep_scratch: bool,
}

/// Where a run's view comes from.
pub(crate) enum CopyRoot {
    /// A leased namespace that holds the view, and the run's scratch made by the caller
    /// ([`super::view_ns`]).
    Namespace(ViewNs, Option<Scratch>),
    /// A detached copy of the template's tree, for a namespace of the run's own
    /// ([`super::enter_copy`]).
    Tree(std::fs::File),
}

impl ViewCopy {
    /// In the child, once its view is built and its ruleset made: closes its inherited copies
    /// of the template's and this copy's descriptors (the caller's stay open).
    pub(crate) fn close_in_child(&self) {
        let template = &self.template;
        let root = match &self.root {
            CopyRoot::Namespace(ns, _) => ns.raw_fd(),
            CopyRoot::Tree(tree) => tree.as_raw_fd(),
        };
        let tmp = self.tmp.iter().map(|(_, f)| f.as_raw_fd());
        let scratch = match &self.root {
            CopyRoot::Namespace(_, Some(scratch)) => Some(scratch.raw_fd()),
            _ => None,
        };
        for fd in [root].into_iter().chain(tmp).chain(scratch) {
            // SAFETY: closing this child's own copy of a descriptor nothing here uses again.
            unsafe { libc::close(fd) };
        }
        // The template's, one call per run of consecutive numbers (they were mostly opened in
        // a row): one `close` per bind cost about 0.7 µs each.
        for &(first, last) in &template.fd_runs {
            // SAFETY: as above, for a range of descriptors that are all the template's.
            unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
        }
    }

    /// The template's bind descriptors, for the Landlock rules (a rule holds the inode, which
    /// the copy shows at the same paths).
    pub(crate) fn bound(&self) -> &BoundSources {
        &self.template.bound
    }

    /// In the child, once it entered its leased namespace: the directory the view shows at the
    /// per-run mount point `path`, which the caller holds open (the run's scratch directories,
    /// the namespace's devpts instance), for its Landlock rule without opening the path.
    pub(crate) fn per_run_dir(&self, path: &Path) -> Option<BorrowedFd<'_>> {
        let CopyRoot::Namespace(ns, scratch) = &self.root else {
            return None;
        };
        if path == Path::new("/dev/pts") {
            return ns.pts_root();
        }
        scratch.as_ref()?.shown_at(path)
    }

    /// The names of the template's `/tmp` entries.
    pub(crate) fn tmp_entries(&self) -> &[TmpEntry] {
        &self.template.tmp_entries
    }

    /// Whether this run's view is a leased namespace.
    pub(crate) fn leased(&self) -> bool {
        matches!(self.root, CopyRoot::Namespace(..))
    }

    /// Whether the run's child joins an IPC namespace lent with its view namespace
    /// ([`crate::ipcns`]) instead of making one.
    pub(crate) fn ipc_lent(&self) -> bool {
        matches!(&self.root, CopyRoot::Namespace(ns, _) if ns.lends_ipc())
    }

    /// The held user namespace the run's child is cloned in, for a template held in one
    /// ([`super::held`]).
    pub(crate) fn held(&self) -> Option<RawFd> {
        self.template.held.as_ref().map(HeldUserNs::raw_fd)
    }

    /// The network namespace lent with a held view, which the run's child joins.
    pub(crate) fn netns(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.net.as_ref().map(crate::netns::Empty::fd)
    }

    /// After a run whose pid 1 was reaped: its leased namespace is free for the next run of the
    /// template if the run's child made all its mounts and the run left its scratch as it was
    /// made, or as made once what it left there is removed ([`Scratch::emptied`]; see
    /// [`super::view_ns`]). Otherwise it is closed, and everything the run left in it is freed
    /// with it.
    ///
    /// A scratch the run never touched ([`Scratch::untouched`]) stays with the namespace, its
    /// mounts in place, and the next run has it as a new one: where no process of the run is
    /// left and none outside it holds a descriptor of it, which the tool could only have passed
    /// out over a socket. So only runs whose network namespace is their own, with `connect`
    /// supervised (`net = "deny"` or a host list: no host socket is reachable), keep theirs.
    pub(crate) fn give_back(self) {
        // As a root runner's leased network namespace: only with no socket left in it.
        if let Some(net) = self.net.filter(crate::netns::Empty::is_empty) {
            let mut idle = self
                .template
                .idle_net
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if idle.len() < MAX_IDLE {
                idle.push(net);
            }
        }
        if let CopyRoot::Namespace(mut ns, scratch) = self.root {
            // Files the run left are removed here, which costs a few system calls per file where
            // closing the namespace costs the next run a new one (about 0.5 ms).
            let left_nothing =
                |s: &Scratch| s.left_empty() || s.emptied(&self.template.tmp_entries);
            if !(ns.ready()
                && ns.lent_parts_left_empty()
                && scratch.as_ref().is_none_or(left_nothing))
            {
                // The namespace closes with what the run left; its user namespace holds none of
                // it, and serves the next one made.
                self.template.keep_user_of(ns);
                return;
            }
            // Checked before the pool's lock is taken: other runs lease and give back meanwhile.
            if let Some(scratch) = scratch
                .filter(|_| self.keep_scratch)
                .and_then(|mut s| s.untouched().then_some(s))
            {
                ns.keep(scratch);
            }
            let mut idle = self.template.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < MAX_IDLE {
                idle.push(ns);
            } else {
                // A pool already full (runs at once outnumbered it) closes this namespace.
                drop(idle);
                self.template.keep_user_of(ns);
            }
        }
    }
}

/// How many descriptors the templates of a process may hold together.
const FD_BUDGET: usize = 4096;

/// The templates of this process, by prepared plan.
static TEMPLATES: PerProcess<HashMap<u64, Arc<Template>>> = PerProcess::new();

/// The plans whose last template build failed, and when to build again: until then their runs
/// build their view themselves, as every run would without a template, instead of paying a
/// failed build first (as much as a whole build: 500 binds cost about 10 ms). Taken only with
/// [`TEMPLATES`] held.
static BUILDS_REFUSED: PerProcess<HashMap<u64, Refused>> = PerProcess::new();

/// Plan `key`'s template, built from `ops`; `None` while the last build failed less than its
/// back-off ago (1 s, doubled at each failure up to 10 minutes), or when this build fails.
fn build_after_back_off(key: u64, ops: &[MountOp], held: bool) -> Option<Template> {
    let refused = || BUILDS_REFUSED.lock(|| {});
    if refused().get(&key).is_some_and(Refused::waits) {
        return None;
    }
    let built = if held { build_held(ops) } else { build(ops) };
    let mut refused = refused();
    match built {
        Ok(t) => {
            refused.remove(&key);
            Some(t)
        }
        Err(why) => {
            let failed = Refused::after(refused.get(&key), why);
            refused.insert(key, failed);
            None
        }
    }
}

/// A copy of plan `key`'s template for one run, the template revalidated (and built again
/// when it no longer holds) first. `None`: no template could be built now, or its last build
/// failed less than a back-off ago ([`build_after_back_off`]); the run builds its view itself,
/// which refuses as a fresh build does.
pub(crate) fn copy(
    key: u64,
    ops: &[MountOp],
    rules: &[PathRule],
    source: ViewSource,
    held: bool,
    net: bool,
    keep_scratch: bool,
) -> Option<ViewCopy> {
    let mut templates = TEMPLATES.lock(|| {});
    let template = match templates.get(&key) {
        Some(t) if t.holds() => t.clone(),
        _ => {
            templates.remove(&key);
            let mut t = build_after_back_off(key, ops, held)?;
            // Only the descriptors a rule is made from: roots whose rules were folded into one
            // on their parent ([`crate::rule_cover`]) need none, in the caller or the child.
            let ruled: std::collections::HashSet<&Path> =
                rules.iter().map(|r| r.path.as_path()).collect();
            t.keep_bound(|path| ruled.contains(path));
            let t = Arc::new(t);
            // Each template holds a descriptor per bind: past the budget, the others are let
            // go (built again at their policy's next run), so a process with many policies
            // does not run out of descriptors.
            let held: usize = templates.values().map(|t| t.fds()).sum();
            if held + t.fds() > FD_BUDGET {
                templates.clear();
            }
            templates.insert(key, t.clone());
            t
        }
    };
    drop(templates);
    let leased = match source {
        ViewSource::Leased => template.lease(),
        ViewSource::Copied => None,
    };
    let (root, tmp) = match (&template.held, leased) {
        (None, leased) => own_side(&template, ops, leased).ok()?,
        // The caller can neither copy a held template's tree nor make the run's scratch where
        // it is: a helper in the held namespaces does the latter, and a run without a leased
        // namespace builds its view itself.
        (Some(_), None) => return None,
        (Some(user), Some(ns)) => {
            let enter = super::held::Enter::Join {
                user: user.raw_fd(),
                mnt: Some(ns.raw_fd()),
            };
            super::held::in_helper(enter, || own_side(&template, ops, Some(ns))).ok()?
        }
    };
    // Lent only with a view namespace: a run that builds its view makes its own.
    let net = match (&template.held, &root) {
        (Some(user), CopyRoot::Namespace(..)) if net => template.lease_net(user),
        _ => None,
    };
    Some(ViewCopy {
        root,
        tmp,
        template,
        net,
        keep_scratch,
    })
}

/// What one run takes from `template` beside its child's own work: the leased namespace
/// `leased` with the run's scratch, or a copy of the whole tree; and the copies of the `/tmp`
/// tree's entries the run attaches.
fn own_side(
    template: &Template,
    ops: &[MountOp],
    leased: Option<ViewNs>,
) -> Result<(CopyRoot, TmpCopies), String> {
    let root = match leased {
        Some(mut ns) => {
            // The scratch is the caller's, so that it can see after the run whether the run
            // left anything there (see `ViewCopy::give_back`); one the last run never touched
            // is still in place.
            let kept = ns.take_kept().map(Ok);
            let scratch = kept.or_else(|| {
                ops.iter().find_map(|op| match op {
                    MountOp::Scratch {
                        size_bytes,
                        tmp,
                        exec,
                    } => Some(Scratch::make(
                        *size_bytes,
                        *tmp,
                        *exec,
                        &template.tmp_entries,
                    )),
                    _ => None,
                })
            });
            CopyRoot::Namespace(ns, scratch.transpose()?)
        }
        None => CopyRoot::Tree(
            super::clone_tree(&template.tree).map_err(|e| format!("copy the template: {e}"))?,
        ),
    };
    // A used namespace's previous run holds the entries, moved on by the child.
    let entries = match &root {
        CopyRoot::Namespace(ns, _) if !ns.fresh() => &[][..],
        _ => &template.tmp_entries[..],
    };
    let mut tmp = Vec::with_capacity(entries.len());
    for TmpEntry { name, .. } in entries {
        let copy = clone_entry(&template.tmp_tree, name)
            .map_err(|e| format!("copy a /tmp entry of the template: {e}"))?;
        let path = Path::new("/tmp").join(std::ffi::OsStr::from_bytes(name.as_bytes()));
        tmp.push((path, copy));
    }
    Ok((root, tmp))
}

/// A detached recursive copy of the entry `name` of the tree `dir` (not following a link).
pub(super) fn clone_entry(dir: &std::fs::File, name: &CStr) -> std::io::Result<std::fs::File> {
    let flags = super::OPEN_TREE_CLONE | AT_RECURSIVE | libc::AT_SYMLINK_NOFOLLOW as libc::c_uint;
    super::open_tree(dir.as_raw_fd(), name, flags)
}

/// A new detached tmpfs of `size` bytes with the mount attributes `attrs`, its root of mode
/// `mode` (octal).
pub(super) fn detached_tmpfs(size: u64, attrs: u64, mode: &CStr) -> Result<std::fs::File, String> {
    let size = CString::new(size.to_string()).map_err(|_| "size".to_string())?;
    detached_fs(
        c"tmpfs",
        &[(c"mode", mode), (c"size", size.as_c_str())],
        attrs,
    )
    .map_err(|FsCallError { call, error }| format!("{call} a tmpfs: {error}"))
}

/// A system call of [`detached_fs`] that failed, and its error.
#[derive(Debug)]
pub(crate) struct FsCallError {
    pub(crate) call: FsCall,
    pub(crate) error: std::io::Error,
}

/// The steps of [`detached_fs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FsCall {
    /// `fsopen` (`ENODEV`: the kernel has no such file system).
    Open,
    /// `fsconfig` of an option.
    Configure,
    /// `fsconfig(FSCONFIG_CMD_CREATE)`.
    Create,
    /// `fsmount`.
    Mount,
}

impl std::fmt::Display for FsCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FsCall::Open => "fsopen",
            FsCall::Configure => "configure",
            FsCall::Create => "create",
            FsCall::Mount => "fsmount",
        })
    }
}

/// A new detached mount of a file system of type `fs`, configured with the string `options`
/// (key, value), with the mount attributes `attrs` (`ENODEV` from `fsopen`: the kernel has no
/// such file system).
pub(crate) fn detached_fs(
    fs: &CStr,
    options: &[(&CStr, &CStr)],
    attrs: u64,
) -> Result<std::fs::File, FsCallError> {
    let fail = |call: FsCall| FsCallError {
        call,
        error: std::io::Error::last_os_error(),
    };
    const FSCONFIG_SET_STRING: u32 = 1;
    const FSCONFIG_CMD_CREATE: u32 = 6;
    const FSMOUNT_CLOEXEC: u32 = 1;
    // SAFETY: fsopen with a C string; the context descriptor is owned here.
    let context = unsafe { libc::syscall(libc::SYS_fsopen, fs.as_ptr(), 1u32) };
    if context < 0 {
        return Err(fail(FsCall::Open));
    }
    // SAFETY: a new descriptor owned here.
    let context = unsafe { std::fs::File::from_raw_fd(context as i32) };
    for (key, value) in options {
        // SAFETY: fsconfig on our context with C strings.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                context.as_raw_fd(),
                FSCONFIG_SET_STRING,
                key.as_ptr(),
                value.as_ptr(),
                0,
            )
        };
        if rc != 0 {
            return Err(fail(FsCall::Configure));
        }
    }
    // SAFETY: fsconfig on our context without pointers.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            context.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_char>(),
            0,
        )
    };
    if rc != 0 {
        return Err(fail(FsCall::Create));
    }
    // SAFETY: fsmount of our configured context.
    let tree = unsafe {
        libc::syscall(
            libc::SYS_fsmount,
            context.as_raw_fd(),
            FSMOUNT_CLOEXEC,
            attrs as u32,
        )
    };
    if tree < 0 {
        return Err(fail(FsCall::Mount));
    }
    // SAFETY: a new descriptor owned here.
    Ok(unsafe { std::fs::File::from_raw_fd(tree as i32) })
}

/// Sets `set` and the propagation `propagation` (0: unchanged) on the mount at `at` (and every
/// mount below it when `recursive`).
fn setattr(at: &Path, recursive: bool, set: u64, propagation: u64) -> Result<(), String> {
    let c = cstr(at)?;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: a valid mount_attr of the size passed and a C string.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(format!(
            "mount_setattr on {}: {}",
            at.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Makes the filesystem of the mount `fs` read-only (`fspick` and a reconfiguration): no
/// mount of it, in any copy, can write to it any more.
fn superblock_read_only(fs: &std::fs::File) -> Result<(), String> {
    const FSPICK_CLOEXEC: u32 = 1;
    const FSPICK_EMPTY_PATH: u32 = 8;
    const FSCONFIG_SET_FLAG: u32 = 0;
    const FSCONFIG_CMD_RECONFIGURE: u32 = 7;
    let fail = |what: &str| format!("{what}: {}", std::io::Error::last_os_error());
    // SAFETY: fspick of an open mount descriptor with an empty path.
    let context = unsafe {
        libc::syscall(
            libc::SYS_fspick,
            fs.as_raw_fd(),
            c"".as_ptr(),
            FSPICK_CLOEXEC | FSPICK_EMPTY_PATH,
        )
    };
    if context < 0 {
        return Err(fail("fspick a tmpfs of the view template"));
    }
    // SAFETY: a new descriptor owned here.
    let context = unsafe { std::fs::File::from_raw_fd(context as i32) };
    let null = std::ptr::null::<libc::c_char>();
    // SAFETY: fsconfig on our context with a C string or null pointers.
    let ok = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            context.as_raw_fd(),
            FSCONFIG_SET_FLAG,
            c"ro".as_ptr(),
            null,
            0,
        ) == 0
            && libc::syscall(
                libc::SYS_fsconfig,
                context.as_raw_fd(),
                FSCONFIG_CMD_RECONFIGURE,
                null,
                null,
                0,
            ) == 0
    };
    if !ok {
        return Err(fail("make a tmpfs of the view template read-only"));
    }
    Ok(())
}

/// Makes the directory `at` of the template unless it is there, only on the template's own
/// filesystems: a mount point is never made in a host directory.
fn mount_point(at: &Path, own_devices: &[u64]) -> Result<(), String> {
    if std::fs::symlink_metadata(at).is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    if !on_own_filesystem(at, own_devices) {
        return Err(format!(
            "the mount point {} would be made in a host directory",
            at.display()
        ));
    }
    mkdir_p(at)
}

/// The mount attributes of the trees' roots: they hold only directories, mount points and
/// links, so nothing on them needs to run (the binds inside carry their own flags).
const OWN_ATTRS: u64 = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;

/// Builds plan `ops`' template (see the module docs).
pub(crate) fn build(ops: &[MountOp]) -> Result<Template, String> {
    // All before any source is opened, so a change made meanwhile is seen at the first run.
    let mounts = MountWatch::open()?;
    let thread_root = super::thread_root();
    let mut template = build_from(ops, mounts, thread_root, begin_fingerprint(ops), None)?;
    template.fingerprint.finish();
    Ok(template)
}

/// A fingerprint of the plan's bind sources, begun (see [`Fingerprint::begin`]).
fn begin_fingerprint(ops: &[MountOp]) -> Fingerprint {
    Fingerprint::begin(ops.iter().filter_map(|op| match op {
        MountOp::Bind { path, .. } | MountOp::Keep { path, .. } => Some(path.as_path()),
        _ => None,
    }))
}

/// Each bind source of a held build in the plan's order, with a descriptor of what it opened
/// (`None`: an optional path that is missing).
type Sources = Vec<(PathBuf, Option<std::fs::File>)>;

/// [`build`] in a user namespace made for it ([`super::held`]), for a runner without
/// `CAP_SYS_ADMIN` over its mount namespace. The mount table watched and the root compared
/// are the calling thread's, whose view the template stands for.
fn build_held(ops: &[MountOp]) -> Result<Template, String> {
    let mounts = MountWatch::open()?;
    let thread_root = super::thread_root();
    // SAFETY: getters without pointers.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let enter = super::held::Enter::New { euid, egid };
    // The fingerprint is the caller's: it stands for the caller's view, in which the helper's
    // files show other owners (ids its user namespace does not map) and other mounts.
    let fingerprint = begin_fingerprint(ops);
    let mut sources = Sources::new();
    let (mut template, user) = super::held::in_helper(enter, || {
        let template = build_from(ops, mounts, thread_root, fingerprint, Some(&mut sources))?;
        Ok((template, HeldUserNs::here()?))
    })?;
    for (path, source) in sources {
        let meta = source
            .map(|f| f.metadata())
            .transpose()
            .map_err(|e| format!("stat {}: {e}", path.display()))?;
        template.fingerprint.rule(&path, meta.as_ref());
    }
    template.fingerprint.finish();
    template.held = Some(user);
    template.keep_bound(|_| true);
    Ok(template)
}

/// Builds plan `ops`' template where this thread is, `mounts`, `thread_root` and `fingerprint`
/// taken before. Each bind source goes to the fingerprint, or to `sources` for the caller to
/// record (a held build); the fingerprint is not finished here.
fn build_from(
    ops: &[MountOp],
    mounts: MountWatch,
    thread_root: Option<(u64, u64, u64)>,
    mut fingerprint: Fingerprint,
    mut sources: Option<&mut Sources>,
) -> Result<Template, String> {
    use std::os::unix::fs::MetadataExt;
    let tree = detached_tmpfs(1 << 20, OWN_ATTRS, c"0755")?;
    // The detached tree is reached by path through its descriptor's magic link: every path
    // below it resolves inside the tree, across the mounts attached in it.
    let root = PathBuf::from(format!("/proc/self/fd/{}", tree.as_raw_fd()));
    let device = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.dev())
            .map_err(|e| format!("stat {}: {e}", p.display()))
    };
    let tmp_tree = detached_tmpfs(1 << 20, OWN_ATTRS, c"0755")?;
    let tmp_root = PathBuf::from(format!("/proc/self/fd/{}", tmp_tree.as_raw_fd()));
    let mut own_devices = vec![device(&root)?, device(&tmp_root)?];
    // The checks that a link or mount point is made only on the view's own filesystems look at
    // the nearest existing ancestor without following it: for an entry at the top of a tree
    // that is the magic link itself, which is on the caller's procfs. No other path of the
    // tree is (procfs is mounted per run), so that device stands for the trees' roots.
    own_devices.push(
        std::fs::symlink_metadata(&root)
            .map(|m| m.dev())
            .map_err(|e| format!("lstat {}: {e}", root.display()))?,
    );
    // The trees' own tmpfs, made read-only once built.
    let mut own_tmpfs: Vec<std::fs::File> = Vec::new();
    let mut bound = BoundSources::default();
    let scratch_tmp = ops
        .iter()
        .position(|op| matches!(op, MountOp::Scratch { tmp: true, .. }));
    for (i, op) in ops.iter().enumerate() {
        // Inside the private /tmp (after its mount in the plan): in the /tmp tree, at the path
        // below /tmp (see `decide`).
        let tmp_tree_path = match (scratch_tmp, op.target().strip_prefix("/tmp")) {
            (Some(s), Ok(rest)) if i > s && in_tmp(op.target()) => Some(Path::new("/").join(rest)),
            _ => None,
        };
        let (root, at) = match &tmp_tree_path {
            Some(rest) => (&tmp_root, rest.as_path()),
            None => (&root, op.target()),
        };
        match op {
            MountOp::Bind { path, .. } | MountOp::Keep { path, .. } => {
                let Some((host, copy)) = bind_source(op)? else {
                    match sources.as_deref_mut() {
                        Some(sources) => sources.push((path.clone(), None)),
                        None => fingerprint.rule(path, None),
                    }
                    continue;
                };
                match sources.as_deref_mut() {
                    Some(sources) => {
                        let dup = host
                            .try_clone()
                            .map_err(|e| format!("keep {}: {e}", path.display()))?;
                        sources.push((path.clone(), Some(dup)));
                    }
                    None => {
                        let meta = host
                            .metadata()
                            .map_err(|e| format!("stat {}: {e}", path.display()))?;
                        fingerprint.rule(path, Some(&meta));
                    }
                }
                let is_dir = attach_bind(&copy, root, at)?;
                bound.0.insert(path.clone(), (host, is_dir));
            }
            MountOp::Tmpfs { .. } | MountOp::Scratch { .. } | MountOp::Devpts | MountOp::Proc
                if tmp_tree_path.is_some() =>
            {
                return Err(format!(
                    "{} is mounted inside the private /tmp",
                    at.display()
                ))
            }
            MountOp::Tmpfs {
                path,
                exec,
                size_bytes,
            } => {
                let mut attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
                if !exec {
                    attrs |= MOUNT_ATTR_NOEXEC;
                }
                let fs = detached_tmpfs(*size_bytes, attrs, c"0755")?;
                let target = under(root, path);
                mount_point(&target, &own_devices)?;
                attach_tree(&fs, &target)?;
                own_devices.push(device(&target)?);
                own_tmpfs.push(fs);
                bound.covered_by(path);
            }
            MountOp::Symlink { target, .. } => {
                copy_link(&under(root, at), target, &own_devices);
            }
            MountOp::Scratch { .. } | MountOp::Devpts | MountOp::Proc => {
                for t in per_run_targets(op) {
                    if *t != "/dev/ptmx" {
                        mount_point(&under(root, Path::new(t)), &own_devices)?;
                    }
                    bound.covered_by(Path::new(t));
                }
                if matches!(op, MountOp::Devpts) {
                    copy_link(
                        &under(root, Path::new("/dev/ptmx")),
                        Path::new("pts/ptmx"),
                        &own_devices,
                    );
                }
            }
            MountOp::File { path, .. } => {
                return Err(format!(
                    "{} is placed per run (a resolver file)",
                    path.display()
                ))
            }
        }
    }
    for (link, target) in super::DEV_LINKS {
        copy_link(&root.join(link), Path::new(target), &own_devices);
    }
    // Read-only before the first copy: every copy shares these superblocks, so they are made
    // read-only themselves (not only their mounts), and the trees' roots too.
    for fs in own_tmpfs.iter().chain([&tree, &tmp_tree]) {
        superblock_read_only(fs)?;
    }
    for at in [&root, &tmp_root] {
        setattr(at, false, MOUNT_ATTR_RDONLY, 0)?;
        setattr(at, true, 0, libc::MS_PRIVATE)?;
    }
    let mut tmp_entries = Vec::new();
    for entry in std::fs::read_dir(&tmp_root).map_err(|e| format!("list the /tmp tree: {e}"))? {
        let entry = entry.map_err(|e| format!("list the /tmp tree: {e}"))?;
        if entry.file_type().map_or(true, |t| t.is_symlink()) {
            return Err(format!(
                "/tmp/{} is a link of the view",
                entry.file_name().to_string_lossy()
            ));
        }
        tmp_entries.push(TmpEntry {
            name: CString::new(entry.file_name().as_bytes())
                .map_err(|_| "a name with NUL".to_string())?,
            dir: entry.file_type().is_ok_and(|t| t.is_dir()),
        });
    }
    let per_run = ops
        .iter()
        .filter(|op| is_per_run(op))
        .flat_map(per_run_targets)
        .filter(|t| **t != "/dev/ptmx")
        .map(Path::new)
        .collect();
    let mut template = Template {
        tree,
        tmp_tree,
        tmp_entries,
        bound,
        fingerprint,
        mounts,
        root: thread_root,
        per_run,
        idle: Mutex::default(),
        refused: Mutex::new(None),
        fd_runs: Vec::new(),
        held: None,
        idle_net: Mutex::default(),
        spare_users: Mutex::default(),
    };
    template.keep_bound(|_| true);
    Ok(template)
}

/// The descriptors `fds` as sorted runs of consecutive numbers, first and last of each.
fn consecutive(fds: impl Iterator<Item = RawFd>) -> Vec<(u32, u32)> {
    let mut fds: Vec<u32> = fds.filter_map(|fd| u32::try_from(fd).ok()).collect();
    fds.sort_unstable();
    fds.dedup();
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for fd in fds {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == fd => *last = fd,
            _ => runs.push((fd, fd)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_closed_in_runs_of_consecutive_numbers() {
        assert_eq!(
            consecutive([9, 5, 8, 11, 12, 13, 5, 3].into_iter()),
            vec![(3, 3), (5, 5), (8, 9), (11, 13)]
        );
        assert_eq!(consecutive([-1, 4].into_iter()), vec![(4, 4)]);
        assert!(consecutive(std::iter::empty()).is_empty());
    }

    fn bind(path: &str) -> MountOp {
        MountOp::Bind {
            path: path.into(),
            write: false,
            exec: false,
            device: false,
            optional: true,
        }
    }

    /// A failed build is not tried again at every run: until its back-off has passed the runs
    /// build their view themselves, and a failure after it doubles the back-off.
    #[test]
    fn a_failed_build_waits_its_back_off() {
        // A bind the plan needs, of a path that does not exist: every build fails.
        let ops = [MountOp::Bind {
            path: "/nonexistent/toolpolicy-template-back-off".into(),
            write: false,
            exec: false,
            device: false,
            optional: false,
        }];
        let key = u64::MAX - 0x7e57;
        let back_off = || BUILDS_REFUSED.lock(|| {}).get(&key).map(|r| r.back_off);
        assert!(copy(key, &ops, &[], ViewSource::Copied, false, false, false).is_none());
        assert_eq!(
            back_off(),
            Some(FIRST_BACK_OFF),
            "the first failure is recorded"
        );
        // Within the back-off: no build, so no second failure doubles it.
        assert!(copy(key, &ops, &[], ViewSource::Copied, false, false, false).is_none());
        assert_eq!(
            back_off(),
            Some(FIRST_BACK_OFF),
            "built again within its back-off"
        );
        // Past it: built again, failed again, twice as long.
        let past = std::time::Instant::now();
        BUILDS_REFUSED
            .lock(|| {})
            .get_mut(&key)
            .expect("recorded")
            .retry_at = past;
        assert!(copy(key, &ops, &[], ViewSource::Copied, false, false, false).is_none());
        assert_eq!(
            back_off(),
            Some(2 * FIRST_BACK_OFF),
            "not built again after it"
        );
        // Each later failure doubles it, up to its cap, where it stays.
        let mut want = 2 * FIRST_BACK_OFF;
        for _ in 0..12 {
            BUILDS_REFUSED
                .lock(|| {})
                .get_mut(&key)
                .expect("recorded")
                .retry_at = std::time::Instant::now();
            assert!(copy(key, &ops, &[], ViewSource::Copied, false, false, false).is_none());
            want = (want * 2).min(MAX_BACK_OFF);
            assert_eq!(back_off(), Some(want), "after a failure past the back-off");
        }
        assert_eq!(want, MAX_BACK_OFF, "the loop reached the cap");
        BUILDS_REFUSED.lock(|| {}).remove(&key);
    }

    /// Plans a template cannot hold build per run, with the reason; roots inside the private
    /// `/tmp` go to its `/tmp` tree.
    #[test]
    fn the_view_build_is_decided_from_the_plan() {
        // A runner without CAP_SYS_ADMIN over its mounts holds its template in a user
        // namespace of its own; the plan's own reasons to build per run are the same.
        let template = if may_mount_here() {
            ViewBuild::Template
        } else {
            ViewBuild::HeldTemplate
        };
        let scratch = MountOp::Scratch {
            size_bytes: 1 << 20,
            tmp: true,
            exec: false,
        };
        assert_eq!(
            decide(&[scratch.clone(), bind("/usr"), bind("/tmp/a/b")]),
            template
        );
        assert_eq!(
            decide(&[scratch.clone(), bind("/dev/shm/x")]),
            ViewBuild::PerRun(PerRunWhy::InsidePerRunMount("/dev/shm/x".into()))
        );
        assert_eq!(
            decide(&[scratch.clone(), bind("/")]),
            ViewBuild::PerRun(PerRunWhy::InsidePerRunMount("/".into()))
        );
        assert_eq!(
            decide(&[MountOp::Proc, bind("/proc/sys")]),
            ViewBuild::PerRun(PerRunWhy::InsidePerRunMount("/proc/sys".into()))
        );
        let link = MountOp::Symlink {
            path: "/tmp/link".into(),
            target: "/etc".into(),
        };
        assert_eq!(
            decide(&[scratch, link]),
            ViewBuild::PerRun(PerRunWhy::InsidePerRunMount("/tmp/link".into()))
        );
        let file = MountOp::File {
            path: "/etc/hosts".into(),
            content: Vec::new(),
        };
        assert_eq!(
            decide(&[bind("/usr"), file]),
            ViewBuild::PerRun(PerRunWhy::ResolverFiles)
        );
    }

    /// A template of 500 binds holds while nothing changed and stops holding when one root is
    /// renamed; prints what the check costs per run.
    #[test]
    fn a_template_of_500_roots_holds_until_a_root_changes() {
        if !crate::child::has_effective_cap(21) {
            crate::test_kernel::missing("a view template needs CAP_SYS_ADMIN (root)");
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(dir.path()).expect("canonical");
        let ops: Vec<MountOp> = (0..500)
            .map(|i| {
                let path = base.join(format!("r{i:03}"));
                std::fs::create_dir(&path).expect("root");
                MountOp::Bind {
                    path,
                    write: false,
                    exec: false,
                    device: false,
                    optional: true,
                }
            })
            .collect();
        let template = build(&ops).expect("template");
        assert_eq!(template.bound.len(), 500);
        let rounds = 200;
        let start = std::time::Instant::now();
        for _ in 0..rounds {
            assert!(template.holds());
        }
        eprintln!(
            "revalidating a template of 500 roots: {:.1} µs per run (this build's profile)",
            start.elapsed().as_secs_f64() * 1e6 / f64::from(rounds)
        );
        std::fs::rename(base.join("r250"), base.join("moved")).expect("rename");
        std::fs::create_dir(base.join("r250")).expect("recreate");
        assert!(!template.holds());
    }
}
