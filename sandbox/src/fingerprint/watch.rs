//! The "nothing changed" fast path of [`super::Fingerprint::holds`]: one inotify instance per
//! process, a watch on every directory a fingerprint walks through and on every rule path, and
//! per fingerprint a count of the events that concerned it.
//!
//! Why an empty queue proves that no path changed: the kernel queues an inotify event from
//! within the system call that makes the change (`rename`, `unlink`, `mkdir`, `symlink`,
//! `chmod`, ...), before that call returns; so a change that has happened is either read by
//! the drain or still in the queue when [`fast`] reads it to `EAGAIN`. A path resolves, without
//! symlinks, to another inode or other permissions only if an entry on its way (a name in a
//! watched directory) or one of its inodes (a watched directory or rule path itself) changed,
//! and each such change raises an event on a watch that follows it:
//!
//! * a watched directory: `IN_CREATE`, `IN_DELETE`, `IN_MOVED_FROM`, `IN_MOVED_TO` and
//!   `IN_ATTRIB` for a name in it (counted only for a fingerprint that follows that name);
//! * a watched directory or rule path itself: `IN_ATTRIB` (mode, owner), `IN_DELETE_SELF`,
//!   `IN_MOVE_SELF`, and `IN_IGNORED` / `IN_UNMOUNT` when the watch is gone (counted for every
//!   fingerprint on it); a lost event (`IN_Q_OVERFLOW`) counts for all. A directory right below
//!   `/` is not watched for `IN_ATTRIB` itself: `/` sees its changes of attributes under its
//!   name (a directory has one name), and asking for them on, say, `/tmp` would make the kernel
//!   walk every name it has cached there, often many thousands. A mount's root there (a tmpfs
//!   on `/tmp`) is the exception: for inotify it is no child of `/`.
//!
//! An event that counts makes the next check a full one ([`super::Fingerprint::holds`] watches
//! the paths again first, so that a watch left on a replaced inode is moved to the new one),
//! except a change of attributes only (`IN_ATTRIB`: it moves no entry, so every watch still
//! stands), after which only the paths it concerns are looked at again: a slot's return resets
//! its scratch directory's mode after a run that changed it.
//!
//! Watches are added top-down, before anything is recorded: a path replaced after its watch was
//! added, or after its parent's, shows as an event on its parent's watch, so a watch that landed
//! on an inode other than the recorded one always has an event pending for its fingerprint.
//!
//! What inotify does not show, and how it is covered:
//!
//! * mounts (a mount over a path changes what it names without touching any inode): the fast
//!   path also requires the mount table unchanged since the fingerprint was last clean
//!   ([`super::mount_generation`]);
//! * changes not made through this kernel's file system calls (a network file system changed
//!   on its server, a FUSE server answering a lookup with another inode, `/proc` and `/sys`,
//!   whose entries come and go by themselves): a path whose device is not one of the local file
//!   systems in [`LOCAL`] (by the mount table), or that lies below one or below something that
//!   is not a directory, is looked at with `lstat` on every check, as before.
//!
//! Fail closed: a fingerprint whose watches could not all be added (an unreadable directory
//! `EACCES`, `ENOSPC` at `max_user_watches`, no inotify instance at `max_user_instances`), a
//! read error, or a path that is not absolute and plain, is checked in full every time.
//!
//! A forked child never reads its parent's queue: the registry is per process
//! ([`crate::per_process`]), and a fingerprint made in another process is checked in full.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::per_process::PerProcess;

/// What a directory on a rule path's way is watched for.
const DIR_EVENTS: u32 = libc::IN_ATTRIB
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF;
/// What a rule path is watched for (its entry is followed by its directory's watch).
const SELF_EVENTS: u32 = libc::IN_ATTRIB | libc::IN_DELETE_SELF | libc::IN_MOVE_SELF;

/// File systems (as the mount table names them) changed only through this kernel's system
/// calls, which raise inotify events. Overlayfs is one as long as its layers are not changed
/// beneath it, which overlayfs itself does not support.
const LOCAL: &[&str] = &[
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "tmpfs", "devtmpfs", "ramfs", "overlay",
];

/// Changes of attributes kept per fingerprint before it is rather checked in full.
const TOUCHED_MAX: usize = 256;

/// A path to watch: a directory on the way to rule paths, following the entries `names` (each
/// with the index of the target it leads to), or a rule path itself (`names` empty, `dir`
/// false).
#[derive(Debug)]
pub(super) struct Target {
    pub(super) path: CString,
    pub(super) dir: bool,
    /// Right below `/`.
    pub(super) top: bool,
    pub(super) names: Vec<(Box<[u8]>, usize)>,
}

/// A fingerprint's place in this process's registry.
#[derive(Debug)]
pub(super) struct Watched {
    owner: u32,
    id: u64,
}

/// Which recorded path a check must still `lstat`: an ancestor's or a rule's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Which {
    Ancestor(usize),
    Rule(usize),
}

/// How far a fingerprint's events had been read when a full check began.
#[derive(Clone, Copy)]
pub(super) struct Seen {
    events: u64,
    touched: (u64, usize),
}

/// What [`fast`] found.
pub(super) enum Fast {
    /// No event since the fingerprint was last clean, the mount table unchanged, and the paths
    /// inotify does not cover are as recorded.
    Holds,
    /// Something may have changed: check in full, then [`settle`] with this.
    Recheck(Seen),
    /// No fast path for this fingerprint: check in full.
    Off,
}

#[derive(Default)]
struct Registry {
    /// The inotify instance: `None` before first use, `Err` when none could be made or its
    /// queue could not be read (nothing is fast from then on).
    inotify: Option<Result<OwnedFd, ()>>,
    /// Per watch descriptor, the fingerprints on it and what each follows there.
    watches: HashMap<i32, HashMap<u64, Follow>>,
    entries: HashMap<u64, Entry>,
    /// Which devices are on a [`LOCAL`] file system, by the mount table at a mount generation.
    local: Option<(u64, HashMap<u64, bool>)>,
}

/// What a fingerprint follows on one watch: the targets (indices) the watched inode is, and
/// per name in it, the targets that name leads to.
#[derive(Default)]
struct Follow {
    selves: Vec<usize>,
    names: HashMap<Box<[u8]>, Vec<usize>>,
}

#[derive(Default)]
struct Entry {
    wds: Vec<i32>,
    /// Events that concerned the fingerprint since it was registered, other than those below.
    events: u64,
    /// Targets whose attributes (only) changed since the last check (`IN_ATTRIB`): a new
    /// `lstat` of each tells whether it still is as recorded, as nothing moved.
    touched: Vec<usize>,
    /// How many times `touched` was cleared.
    cleared: u64,
    clean: Option<Clean>,
    broken: bool,
}

/// When the fingerprint was last found to hold.
struct Clean {
    events: u64,
    generation: u64,
    unsure: Vec<Which>,
}

static REGISTRY: PerProcess<Registry> = PerProcess::new();
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

#[cfg(test)]
thread_local! {
    /// Test-only: adding a watch fails with `ENOSPC`, as at `max_user_watches`.
    pub(super) static FAIL_WATCHES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock(|| {})
}

impl Registry {
    fn inotify(&mut self) -> Option<i32> {
        let made = self.inotify.get_or_insert_with(|| {
            // SAFETY: no pointers; a new descriptor or -1.
            let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            if fd < 0 {
                return Err(());
            }
            // SAFETY: a new descriptor, owned here.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        });
        made.as_ref().ok().map(AsRawFd::as_raw_fd)
    }

    /// Watches `targets` for `id`; `false` when one that exists could not be watched. A path
    /// that does not exist (`ENOENT`, `ENOTDIR`) needs no watch: its appearance is an event of
    /// its parent's, which was added before it.
    fn add(&mut self, id: u64, targets: &[Target]) -> bool {
        let Some(fd) = self.inotify() else {
            return false;
        };
        let mut wds = Vec::new();
        for (index, t) in targets.iter().enumerate() {
            let mask = if t.dir { DIR_EVENTS } else { SELF_EVENTS };
            let flags = libc::IN_DONT_FOLLOW | libc::IN_MASK_ADD;
            let mut added = Err(libc::ENOTDIR);
            if t.top && !mount_root_or_unknown(&t.path) {
                // A directory right below `/`: its changes of attributes are events of `/`'s
                // (under its name), as a directory has no other name; not asking for them on
                // the directory itself spares the kernel a walk of all it has cached below it
                // (`/tmp`: often ~10 ms, for its many names looked up and not found). Not so
                // for a mount's root (a tmpfs on `/tmp`, a bind): its parent for inotify is
                // not `/`, so it is watched for them itself.
                let top = (mask & !libc::IN_ATTRIB) | flags | libc::IN_ONLYDIR;
                added = add_watch(fd, &t.path, top);
            }
            if added == Err(libc::ENOTDIR) {
                added = add_watch(fd, &t.path, mask | flags);
            }
            match added {
                Ok(wd) => {
                    let follow = self.watches.entry(wd).or_default().entry(id).or_default();
                    if !follow.selves.contains(&index) {
                        follow.selves.push(index);
                    }
                    for (name, to) in &t.names {
                        let tos = follow.names.entry(name.clone()).or_default();
                        if !tos.contains(to) {
                            tos.push(*to);
                        }
                    }
                    if !wds.contains(&wd) {
                        wds.push(wd);
                    }
                }
                Err(libc::ENOENT | libc::ENOTDIR) => {}
                Err(_) => {
                    // Those added so far are released with the entry's old ones.
                    let entry = self.entries.entry(id).or_default();
                    for wd in wds {
                        if !entry.wds.contains(&wd) {
                            entry.wds.push(wd);
                        }
                    }
                    return false;
                }
            }
        }
        let entry = self.entries.entry(id).or_default();
        let old = std::mem::replace(&mut entry.wds, wds);
        for wd in old {
            if !self.entries[&id].wds.contains(&wd) {
                self.unfollow(wd, id);
            }
        }
        true
    }

    fn unfollow(&mut self, wd: i32, id: u64) {
        let Some(followers) = self.watches.get_mut(&wd) else {
            return;
        };
        followers.remove(&id);
        if followers.is_empty() {
            self.watches.remove(&wd);
            if let Some(Ok(fd)) = &self.inotify {
                // SAFETY: our descriptor; an unknown wd is only an error.
                unsafe { libc::inotify_rm_watch(fd.as_raw_fd(), wd) };
            }
        }
    }

    /// Gives up the fast path of `id` for good: its watches are released.
    fn break_entry(&mut self, id: u64) {
        let wds = match self.entries.get_mut(&id) {
            Some(entry) => {
                entry.broken = true;
                entry.clean = None;
                std::mem::take(&mut entry.wds)
            }
            None => return,
        };
        for wd in wds {
            self.unfollow(wd, id);
        }
    }

    /// Reads the queue to `EAGAIN`, counting each event for the fingerprints it concerns.
    fn drain(&mut self) {
        let Some(Ok(fd)) = &self.inotify else {
            return;
        };
        let fd = fd.as_raw_fd();
        // Room for many events; u32-aligned, as the kernel writes `struct inotify_event`s.
        let mut buf = [0u32; 1024];
        loop {
            // SAFETY: our descriptor and a buffer of that many bytes.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(&buf)) };
            if n < 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::EAGAIN) => return,
                    Some(libc::EINTR) => continue,
                    _ => return self.fail(),
                }
            }
            // SAFETY: the buffer's own bytes, of which the kernel wrote `n`.
            let bytes: &[u8] = unsafe {
                std::slice::from_raw_parts(buf.as_ptr().cast(), std::mem::size_of_val(&buf))
            };
            let mut events = &bytes[..n as usize];
            if events.is_empty() {
                return;
            }
            while events.len() >= 16 {
                let word = |i: usize| {
                    u32::from_ne_bytes(events[i * 4..i * 4 + 4].try_into().expect("4 bytes"))
                };
                let (wd, mask, len) = (word(0) as i32, word(1), word(3) as usize);
                let Some(name) = events.get(16..16 + len) else {
                    return self.fail();
                };
                let name = &name[..name.iter().position(|b| *b == 0).unwrap_or(len)];
                self.event(wd, mask, name);
                events = &events[16 + len..];
            }
            if !events.is_empty() {
                return self.fail();
            }
        }
    }

    /// The queue cannot be read as expected: nothing is fast from now on.
    fn fail(&mut self) {
        self.inotify = Some(Err(()));
        self.watches.clear();
        for entry in self.entries.values_mut() {
            entry.broken = true;
            entry.clean = None;
            entry.wds.clear();
        }
    }

    fn event(&mut self, wd: i32, mask: u32, name: &[u8]) {
        if mask & libc::IN_Q_OVERFLOW != 0 {
            for entry in self.entries.values_mut() {
                entry.events += 1;
            }
            return;
        }
        let Some(followers) = self.watches.get(&wd) else {
            // A watch already released.
            return;
        };
        // A change of attributes only (mode, owner, times, ...) moves nothing: the paths it
        // concerns are looked at again, not every path.
        let attributes = mask & !libc::IN_ISDIR == libc::IN_ATTRIB;
        for (id, follow) in followers {
            // An event about the watched inode itself concerns all on it; one about a name in
            // it, only who follows that name.
            let concerned = if name.is_empty() {
                Some(&follow.selves)
            } else {
                follow.names.get(name)
            };
            let (Some(targets), Some(entry)) = (concerned, self.entries.get_mut(id)) else {
                continue;
            };
            if attributes && entry.touched.len() < TOUCHED_MAX {
                // Kept in order, repeats too: a full check clears only those before it.
                entry.touched.extend(targets);
            } else if attributes {
                // Many: a full check instead.
                entry.events += 1;
                entry.touched.clear();
                entry.cleared += 1;
            } else {
                entry.events += 1;
            }
        }
        if mask & libc::IN_IGNORED != 0 {
            // The kernel dropped the watch (its inode went, or its file system): its number may
            // be given to another inode later.
            let followers = self.watches.remove(&wd).unwrap_or_default();
            for id in followers.keys() {
                if let Some(entry) = self.entries.get_mut(id) {
                    entry.events += 1;
                    entry.wds.retain(|w| *w != wd);
                }
            }
        }
    }

    /// Whether each device is on a [`LOCAL`] file system, by the mount table now (read once
    /// per mount generation).
    fn local(&mut self, generation: u64) -> &HashMap<u64, bool> {
        if self.local.as_ref().is_none_or(|(g, _)| *g != generation) {
            self.local = Some((generation, local_devices()));
        }
        &self.local.as_ref().expect("just set").1
    }
}

fn add_watch(fd: i32, path: &CString, mask: u32) -> Result<i32, i32> {
    #[cfg(test)]
    if FAIL_WATCHES.with(std::cell::Cell::get) {
        return Err(libc::ENOSPC);
    }
    // SAFETY: our descriptor and a NUL-terminated path.
    let wd = unsafe { libc::inotify_add_watch(fd, path.as_ptr(), mask) };
    if wd < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    Ok(wd)
}

/// Per device of the mount table, whether its file system is [`LOCAL`]; empty when the table
/// cannot be read (every path is then looked at on each check).
fn local_devices() -> HashMap<u64, bool> {
    // The calling thread's namespace: the one whose generation keys the answer.
    let table = std::fs::read_to_string("/proc/thread-self/mountinfo").unwrap_or_default();
    let mut devices = HashMap::new();
    for line in table.lines() {
        // `id parent major:minor root point options [optional...] - type source super`
        let mut fields = line.split(' ');
        let Some((major, minor)) = fields.nth(2).and_then(|d| d.split_once(':')) else {
            continue;
        };
        let (Ok(major), Ok(minor)) = (major.parse(), minor.parse()) else {
            continue;
        };
        let Some(kind) = fields.skip_while(|f| *f != "-").nth(1) else {
            continue;
        };
        let dev = libc::makedev(major, minor);
        // A device mounted as two kinds (never seen) counts as not local.
        let local = LOCAL.contains(&kind);
        let slot = devices.entry(dev).or_insert(local);
        *slot &= local;
    }
    devices
}

/// Registers a fingerprint and watches `targets` (top-down) for it; `None` when any could not
/// be watched (the fingerprint is then checked in full every time).
pub(super) fn register(targets: &[Target]) -> Option<Watched> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut registry = registry();
    registry.entries.insert(id, Entry::default());
    if !registry.add(id, targets) {
        registry.break_entry(id);
        registry.entries.remove(&id);
        return None;
    }
    Some(Watched {
        owner: std::process::id(),
        id,
    })
}

/// The fast path: `Holds` when no event concerned the fingerprint since it was last clean but
/// changes of attributes only, the mount generation is the one it was clean at, and `still`
/// finds the paths that inotify does not cover, and the targets whose attributes changed, as
/// recorded.
pub(super) fn fast(
    w: &Watched,
    generation: Option<u64>,
    still: impl Fn(&[Which], &[usize]) -> bool,
) -> Fast {
    if w.owner != std::process::id() {
        return Fast::Off;
    }
    let mut registry = registry();
    registry.drain();
    let Some(entry) = registry.entries.get_mut(&w.id) else {
        return Fast::Off;
    };
    if entry.broken {
        return Fast::Off;
    }
    match &entry.clean {
        Some(clean)
            if clean.events == entry.events
                && Some(clean.generation) == generation
                && still(&clean.unsure, &entry.touched) =>
        {
            // Looked at after the drain that reported them, under the lock: a later change is
            // a later event.
            entry.touched.clear();
            entry.cleared += 1;
            Fast::Holds
        }
        _ => Fast::Recheck(Seen {
            events: entry.events,
            touched: (entry.cleared, entry.touched.len()),
        }),
    }
}

/// Watches `targets` again (where a path now leads to another inode, the new one), before a
/// full check; `false` when one could not be watched (the fast path is then off for good).
pub(super) fn rewatch(w: &Watched, targets: &[Target]) -> bool {
    if w.owner != std::process::id() {
        return false;
    }
    let mut registry = registry();
    if registry.entries.get(&w.id).is_none_or(|e| e.broken) {
        return false;
    }
    if !registry.add(w.id, targets) {
        registry.break_entry(w.id);
        return false;
    }
    true
}

/// Records that the fingerprint held, in full, after the events `seen` and at mount generation
/// `generation` (both read before its watches were added and its paths looked at); `unsure`
/// names, given which devices are local, the paths a fast check must still `lstat` (`None`: no
/// fast check can do).
pub(super) fn settle(
    w: &Watched,
    seen: Option<Seen>,
    generation: u64,
    unsure: impl FnOnce(&dyn Fn(u64) -> bool) -> Option<Vec<Which>>,
) {
    if w.owner != std::process::id() {
        return;
    }
    let mut registry = registry();
    let local = registry.local(generation);
    let unsure = unsure(&|dev| local.get(&dev).copied().unwrap_or(false));
    let Some(unsure) = unsure else {
        registry.break_entry(w.id);
        return;
    };
    if let Some(entry) = registry.entries.get_mut(&w.id) {
        if !entry.broken {
            let events = seen.map_or(0, |s| s.events);
            // The touched targets the full check came after; later ones stay to be looked at.
            if let Some((cleared, len)) = seen.map(|s| s.touched) {
                if cleared == entry.cleared {
                    entry.touched.drain(..len.min(entry.touched.len()));
                }
            }
            entry.clean = Some(Clean {
                events,
                generation,
                unsure,
            });
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if self.owner != std::process::id() {
            // A copy in a forked child: the watches are the parent's.
            return;
        }
        let mut registry = registry();
        registry.break_entry(self.id);
        registry.entries.remove(&self.id);
    }
}

/// How many watches this process holds (test-only).
#[cfg(test)]
pub(super) fn watch_count() -> usize {
    registry().watches.len()
}

/// Whether `path` is the root of a mount (`statx`: `STATX_ATTR_MOUNT_ROOT`), or the kernel
/// does not say.
fn mount_root_or_unknown(path: &CString) -> bool {
    // SAFETY: an all-zero statx is valid; statx fills it.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a live buffer.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            0,
            &mut stx,
        )
    };
    let bit = libc::STATX_ATTR_MOUNT_ROOT as u64;
    rc != 0 || stx.stx_attributes_mask & bit == 0 || stx.stx_attributes & bit != 0
}
