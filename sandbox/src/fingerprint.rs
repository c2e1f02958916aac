//! What a set of paths named when a Landlock ruleset was built, and whether they still do.
//!
//! A rule holds the inode its path named at build time, not the path. A ruleset kept for
//! later runs ([`crate::slots`]) is only as good as a fresh build while every path still leads,
//! without a symlink, to the same inode: a root renamed away and recreated must be the new
//! directory, and a root replaced by a symlink must be refused or skipped, never served.
//!
//! The fingerprint records, before any rule is opened, every ancestor directory of every rule
//! path (`lstat`: type, device, inode, mode, owner), and then for each rule what its opened
//! descriptor was (`fstat`), or that it could not be opened. [`Fingerprint::holds`] asks the
//! same questions again, one `fstatat(AT_SYMLINK_NOFOLLOW)` per distinct path: a path resolves
//! without symlinks to the recorded inode exactly when none of its ancestors changed type,
//! identity or permissions and its last component is that inode, not a link. A change made
//! while the fingerprint was taken is caught too, as the ancestors are recorded first.
//!
//! Rule paths many to a directory (8 or more, in a directory of at most 4 entries per such
//! path) are checked by one listing of the directory instead: each name's entry must have the
//! same inode number and type as when the rule was made from it (the listing taken before the
//! rule paths were opened, and used only for the names on which both agree), and the mount
//! table must not have changed since (a listing does not show a mount on an entry; any mount,
//! unmount or move in the namespace, seen as `POLLPRI` on `/proc/self/mountinfo`, makes the
//! check fail and the ruleset be built again). An inode number names one inode at a time, and
//! the inode of a rule cannot be freed and its number reused while the ruleset lives: Landlock
//! holds a reference to it.
//!
//! Paths name files in the mount namespace and under the root directory of the thread that
//! looks them up, so a fingerprint holds only for a thread of the building thread's root
//! ([`crate::mounts::thread_root`], one `statx`), and the mount table it follows is that
//! namespace's (`/proc/thread-self/mountinfo`, opened by one of its threads), not the first
//! thread's.
//!
//! That full check costs, on the machine of the spawn bench, about 1.0 µs per rule path checked
//! on its own (one `fstatat`), about 0.3–0.4 µs per rule path checked by a listing. It runs
//! only when something may have changed: every directory the check walks through and every rule
//! path is watched with inotify ([`watch`]), and while no event concerned the fingerprint and
//! the mount table is unchanged, [`Fingerprint::holds`] is one `statx` of the thread's root (see
//! below), one `read` of the inotify queue and one `poll` of the mount table, about 2.5 µs
//! whatever the number of paths (1.6 µs without the root's `statx`; the module [`watch`] says
//! why an empty queue proves that nothing changed, and which paths it cannot vouch for).

mod watch;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path};
use std::sync::Mutex;

use watch::{Fast, Target, Watched, Which};

#[cfg(test)]
thread_local! {
    /// Test-only: full checks made by this thread.
    static FULL_CHECKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Test-only: paths looked up (`fstatat`, or a directory opened to list it) by this thread.
    static LOOKUPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
fn count(counter: &'static std::thread::LocalKey<std::cell::Cell<usize>>) {
    counter.with(|c| c.set(c.get() + 1));
}

/// What a path was: its file's identity and permissions, or the error that stopped `lstat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// Device, inode, mode (type and permissions), owner and group.
    Present {
        dev: u64,
        ino: u64,
        mode: u32,
        uid: u32,
        gid: u32,
    },
    /// An ancestor that did not exist or could not be looked at (the errno).
    Failed(i32),
    /// A rule path that could not be opened without following a link (missing, a symlink, or
    /// below something that is not a directory): no rule was made.
    NoRule,
}

impl Seen {
    fn of_meta(meta: &std::fs::Metadata) -> Seen {
        Seen::Present {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            uid: meta.uid(),
            gid: meta.gid(),
        }
    }

    /// `lstat` of `path` now.
    fn lstat(path: &CString) -> Seen {
        match lstat(path) {
            Ok(st) => Seen::Present {
                dev: st.st_dev,
                ino: st.st_ino,
                mode: st.st_mode,
                uid: st.st_uid,
                gid: st.st_gid,
            },
            Err(errno) => Seen::Failed(errno),
        }
    }

    /// What a rule path is now, in the terms it was recorded in: a link or a failed lookup is
    /// "no rule" (the ancestors' own entries tell apart the ways of getting there).
    fn rule_now(path: &CString) -> Seen {
        match Seen::lstat(path) {
            Seen::Present { mode, .. } if mode & libc::S_IFMT == libc::S_IFLNK => Seen::NoRule,
            Seen::Failed(_) => Seen::NoRule,
            seen => seen,
        }
    }
}

/// What the paths of one ruleset named when it was built (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Fingerprint {
    ancestors: Vec<(CString, Seen)>,
    /// The rule paths checked one `lstat` each.
    rules: Vec<(CString, Seen)>,
    /// The rule paths checked by listing their directory.
    groups: Vec<Group>,
    /// The building thread's root ([`crate::mounts::thread_root`]): its mount namespace and
    /// `chroot`. Another shows other files at the same paths, and a rule's inode by paths this
    /// one may not have (a bind of it elsewhere while the rule path itself is hidden), so the
    /// fingerprint holds only for a thread of the same root; `None`: for none.
    root: Option<Root>,
    /// The mount generation of that root ([`mount_generation`]) before anything was recorded;
    /// `None`: no mount changes can be seen, and every rule path is checked on its own.
    mounts: Option<u64>,
    /// What is watched for the fast path (top-down), and where (`None`: always a full check).
    targets: Vec<Target>,
    watch: Option<Watched>,
    /// Per target, the recorded paths it is (empty: none checked on its own, as a listed one).
    recorded: Vec<Vec<Which>>,
}

/// Below this many rule paths in one directory, each is checked with its own `lstat`.
const GROUP_MIN: usize = 8;
/// A directory is listed for its rule paths only when it holds at most this many entries per
/// rule path in it (listing a large directory would cost more than the `lstat` calls).
const GROUP_SPARSENESS: usize = 4;

/// Rule paths of one directory, checked by one listing of it: what each name's entry was (inode
/// number and type), or that there was none.
#[derive(Debug)]
struct Group {
    dir: CString,
    dev: u64,
    ino: u64,
    entries: HashMap<Box<[u8]>, Option<(u64, u8)>>,
    present: usize,
}

impl Group {
    /// Lists `dir` (opened without following a link) for `names`; `None` when it cannot be
    /// listed, is too large, or does not say an entry's type.
    fn list(dir: &CStr, names: &[&[u8]]) -> Option<Group> {
        let mut entries: HashMap<Box<[u8]>, Option<(u64, u8)>> =
            names.iter().map(|n| (Box::from(*n), None)).collect();
        let (mut count, mut known) = (0, true);
        let (dev, ino, _) = open_and_visit(dir, |name, d_ino, d_type| {
            count += 1;
            if let Some(slot) = entries.get_mut(name.to_bytes()) {
                known &= d_type != libc::DT_UNKNOWN;
                *slot = Some(entry_seen(d_ino, d_type));
            }
            true
        })?;
        if !known || count > GROUP_SPARSENESS * names.len() {
            return None;
        }
        let present = entries.values().filter(|e| e.is_some()).count();
        Some(Group {
            dir: dir.to_owned(),
            dev,
            ino,
            entries,
            present,
        })
    }

    /// Whether the listing now shows every name as it was.
    fn holds(&self) -> bool {
        let mut seen = 0;
        let visited = open_and_visit(&self.dir, |name, d_ino, d_type| {
            match self.entries.get(name.to_bytes()) {
                None => true,
                Some(Some(was)) if *was == entry_seen(d_ino, d_type) => {
                    seen += 1;
                    true
                }
                Some(_) => false,
            }
        });
        matches!(visited, Some((dev, ino, true)) if (dev, ino) == (self.dev, self.ino))
            && seen == self.present
    }
}

/// What matters of an entry: its inode number and type, except that any symlink is the same
/// as any other (a rule path that is a link gets no rule, wherever it points).
fn entry_seen(d_ino: u64, d_type: u8) -> (u64, u8) {
    if d_type == libc::DT_LNK {
        (0, d_type)
    } else {
        (d_ino, d_type)
    }
}

/// The directory at `dir` (not through a link): its device and inode, and whether `each` saw
/// all its entries ([`crate::scratch::visit`]).
fn open_and_visit(
    dir: &CStr,
    each: impl FnMut(&CStr, u64, u8) -> bool,
) -> Option<(u64, u64, bool)> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    #[cfg(test)]
    count(&LOOKUPS);
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(dir.as_ptr(), flags) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a new descriptor, owned here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an all-zero stat is valid; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a live descriptor and buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    let all = crate::scratch::visit(fd, each).ok()?;
    Some((st.st_dev, st.st_ino, all))
}

/// A thread's root directory as [`crate::mounts::thread_root`] names it: its mount namespace
/// and `chroot`.
type Root = (u64, u64, u64);

/// How many mount namespaces (roots) [`mount_generation`] follows at once; the least recently
/// asked about is dropped first (its descriptor holds its namespace alive).
const ROOTS_FOLLOWED: usize = 8;

/// A count of the changes seen so far to the mount table of the namespace and root `root`,
/// which must be the calling thread's, or `None` when they cannot be seen (no `/proc`). A
/// change is seen as `POLLPRI` on that thread's `/proc/thread-self/mountinfo`, which the kernel
/// raises on every mount, unmount or move in the namespace (propagated ones included) since
/// the descriptor's last poll. Each namespace has a descriptor of its own, opened by the first
/// of its threads to ask: `/proc/self/mountinfo` shows only the first thread's namespace, and a
/// descriptor keeps the namespace of its opening, so a thread that entered another namespace
/// would watch the wrong one. A generation is never given twice, to any namespace: a
/// namespace followed again after it was dropped starts at a value no fingerprint recorded.
fn mount_generation(root: Root) -> Option<u64> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    /// Per root followed: the descriptor and the generation last given.
    type Followed = Vec<(Root, OwnedFd, u64)>;
    static STATE: Mutex<(u32, Followed)> = Mutex::new((0, Vec::new()));
    let next = || NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let me = std::process::id();
    if state.0 != me {
        // A forked child: its own counts from here.
        *state = (me, Vec::new());
    }
    let followed = &mut state.1;
    let at = match followed.iter().position(|(r, _, _)| *r == root) {
        Some(at) => at,
        None => {
            // SAFETY: a NUL-terminated path.
            let fd = unsafe {
                libc::open(
                    c"/proc/thread-self/mountinfo".as_ptr(),
                    libc::O_RDONLY | libc::O_CLOEXEC,
                )
            };
            if fd < 0 {
                return None;
            }
            if followed.len() == ROOTS_FOLLOWED {
                followed.remove(0);
            }
            // SAFETY: a new descriptor, owned here.
            followed.push((root, unsafe { OwnedFd::from_raw_fd(fd) }, next()));
            followed.len() - 1
        }
    };
    // The most recently asked about last.
    let entry = followed.remove(at);
    followed.push(entry);
    let (_, fd, generation) = followed.last_mut().expect("just pushed");
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLPRI,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    if n < 0 {
        return None;
    }
    if p.revents & (libc::POLLPRI | libc::POLLERR) != 0 {
        *generation = next();
    }
    Some(*generation)
}

/// `lstat` (`fstatat` with `AT_SYMLINK_NOFOLLOW`, no allocation): the file the path names, a
/// link itself rather than its target, or the errno.
pub(crate) fn lstat(path: &CStr) -> Result<libc::stat, i32> {
    #[cfg(test)]
    count(&LOOKUPS);
    // SAFETY: an all-zero stat is valid; fstatat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a live stat buffer.
    let rc = unsafe {
        libc::fstatat(
            libc::AT_FDCWD,
            path.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    Ok(st)
}

fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// What to watch for `paths`, parents before children: each directory on the way to a path
/// with the names it leads on by, and each path itself. `None` when a path is not absolute or
/// goes through `..` (its meaning would hang on more than the entries watched).
fn targets(paths: &[&Path]) -> Option<Vec<Target>> {
    fn key(p: &Path) -> (usize, &[u8]) {
        (p.components().count(), p.as_os_str().as_bytes())
    }
    // Per path, by depth then bytes (parents first): the names followed in it, if a directory
    // on the way to another.
    type Followed<'a> = Option<HashSet<&'a [u8]>>;
    let mut all: BTreeMap<(usize, &[u8]), Followed<'_>> = BTreeMap::new();
    for p in paths {
        let plain = p.is_absolute()
            && p.components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !plain {
            return None;
        }
        all.entry(key(p)).or_insert(None);
        let mut child: &Path = p;
        for a in p.ancestors().skip(1) {
            let name = child.file_name()?.as_bytes();
            all.entry(key(a))
                .or_insert(None)
                .get_or_insert_with(HashSet::new)
                .insert(name);
            child = a;
        }
    }
    let index: HashMap<&[u8], usize> = all
        .keys()
        .enumerate()
        .map(|(i, (_, path))| (*path, i))
        .collect();
    all.iter()
        .map(|((depth, path), names)| {
            let followed = names.iter().flatten().map(|name| {
                let mut child = path.to_vec();
                if child.last() != Some(&b'/') {
                    child.push(b'/');
                }
                child.extend_from_slice(name);
                Some((Box::from(*name), *index.get(child.as_slice())?))
            });
            Some(Target {
                path: CString::new(*path).ok()?,
                dir: names.is_some(),
                top: *depth == 2,
                names: followed.collect::<Option<_>>()?,
            })
        })
        .collect()
}

impl Fingerprint {
    /// Starts a fingerprint of `paths` by recording their ancestors now: call it before any of
    /// them is opened, then [`Fingerprint::rule`] for each as it is.
    pub(crate) fn begin<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Fingerprint {
        let paths: Vec<&Path> = paths.into_iter().collect();
        // Walking up stops at the first ancestor already seen: its own are in the set too.
        let mut seen: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
        let mut ancestors: Vec<&Path> = Vec::new();
        for p in &paths {
            for a in p.ancestors().skip(1) {
                if a.as_os_str().is_empty() || !seen.insert(a.as_os_str().as_bytes()) {
                    break;
                }
                ancestors.push(a);
            }
        }
        // The mount generation before the watches, and both before anything is recorded: a
        // change made meanwhile is an event or a new generation.
        let root = crate::mounts::thread_root();
        let mounts = root.and_then(mount_generation);
        let targets = mounts.and_then(|_| targets(&paths)).unwrap_or_default();
        let watch = (!targets.is_empty())
            .then(|| watch::register(&targets))
            .flatten();
        let ancestors = ancestors
            .into_iter()
            .filter_map(c_path)
            .map(|c| {
                let seen = Seen::lstat(&c);
                (c, seen)
            })
            .collect();
        let mut groups = Vec::new();
        if mounts.is_some() {
            let mut by_dir: HashMap<&[u8], (&Path, Vec<&[u8]>)> = HashMap::new();
            for p in &paths {
                if let (Some(dir), Some(name)) = (p.parent(), p.file_name()) {
                    let group = by_dir
                        .entry(dir.as_os_str().as_bytes())
                        .or_insert_with(|| (dir, Vec::new()));
                    group.1.push(name.as_bytes());
                }
            }
            for (_, (dir, names)) in by_dir {
                if names.len() >= GROUP_MIN {
                    groups.extend(c_path(dir).and_then(|d| Group::list(&d, &names)));
                }
            }
        }
        Fingerprint {
            ancestors,
            rules: Vec::new(),
            groups,
            root,
            mounts,
            targets,
            watch,
            recorded: Vec::new(),
        }
    }

    /// After the last [`Fingerprint::rule`]: a rule path whose listed entry is what its rule
    /// was made from (the same inode on its directory's device, the same type; or no entry and
    /// no rule) is checked by its directory's listing from then on; any other stays checked on
    /// its own (and leaves its group).
    pub(crate) fn finish(&mut self) {
        let groups = std::mem::take(&mut self.groups);
        for mut group in groups {
            let mut grouped = 0;
            let dir = group.dir.as_bytes();
            self.rules.retain(|(path, seen)| {
                let path = path.as_bytes();
                let Some(name) = path
                    .strip_prefix(dir)
                    .and_then(|rest| rest.strip_prefix(b"/"))
                    .filter(|n| !n.contains(&b'/'))
                else {
                    return true;
                };
                let Some(entry) = group.entries.get_mut(name) else {
                    return true;
                };
                let agrees = match (*entry, *seen) {
                    (
                        Some((ino, kind)),
                        Seen::Present {
                            dev,
                            ino: fd_ino,
                            mode,
                            ..
                        },
                    ) => {
                        dev == group.dev
                            && ino == fd_ino
                            && u32::from(kind) == (mode & libc::S_IFMT) >> 12
                    }
                    (Some((_, kind)), Seen::NoRule) => kind == libc::DT_LNK,
                    (None, Seen::NoRule) => true,
                    _ => false,
                };
                if !agrees {
                    // Checked on its own; its entry no longer counts in the group.
                    if entry.take().is_some() {
                        group.present -= 1;
                    }
                    group.entries.remove(name);
                    return true;
                }
                grouped += 1;
                false
            });
            if grouped > 0 {
                self.groups.push(group);
            }
        }
        let mut recorded: HashMap<&[u8], Vec<Which>> = HashMap::new();
        for (i, (p, _)) in self.ancestors.iter().enumerate() {
            recorded
                .entry(p.as_bytes())
                .or_default()
                .push(Which::Ancestor(i));
        }
        for (i, (p, _)) in self.rules.iter().enumerate() {
            recorded
                .entry(p.as_bytes())
                .or_default()
                .push(Which::Rule(i));
        }
        let recorded = self
            .targets
            .iter()
            .map(|t| recorded.remove(t.path.as_bytes()).unwrap_or_default())
            .collect();
        self.recorded = recorded;
        // Clean as of the watches' start: any event since counts.
        if let (Some(w), Some(generation)) = (&self.watch, self.mounts) {
            watch::settle(w, None, generation, |local| self.unsure(local));
        }
    }

    /// The recorded paths that inotify does not vouch for, which a fast check still looks at:
    /// those on a file system that is not local (by `local`, per device) and those below one or
    /// below something that is not a directory (see [`watch`]). `None` when a listed directory
    /// is among them.
    fn unsure(&self, local: &dyn Fn(u64) -> bool) -> Option<Vec<Which>> {
        let foreign = |seen: &Seen| matches!(*seen, Seen::Present { dev, .. } if !local(dev));
        let blind: HashSet<&[u8]> = self
            .ancestors
            .iter()
            .filter(|(_, seen)| {
                foreign(seen)
                    || matches!(*seen, Seen::Present { mode, .. } if mode & libc::S_IFMT != libc::S_IFDIR)
            })
            .map(|(p, _)| p.as_bytes())
            .collect();
        let below_blind = |p: &[u8]| {
            Path::new(OsStr::from_bytes(p))
                .ancestors()
                .skip(1)
                .any(|a| blind.contains(a.as_os_str().as_bytes()))
        };
        if self
            .groups
            .iter()
            .any(|g| blind.contains(g.dir.as_bytes()) || below_blind(g.dir.as_bytes()))
        {
            return None;
        }
        let ancestors = self
            .ancestors
            .iter()
            .enumerate()
            .filter_map(|(i, (p, seen))| {
                (foreign(seen) || below_blind(p.as_bytes())).then_some(Which::Ancestor(i))
            });
        let rules = self.rules.iter().enumerate().filter_map(|(i, (p, seen))| {
            (foreign(seen) || below_blind(p.as_bytes())).then_some(Which::Rule(i))
        });
        Some(ancestors.chain(rules).collect())
    }

    /// Whether the paths `which`, and the targets `touched` (by index), are as recorded; a
    /// target with no path recorded on its own never is.
    fn still(&self, which: &[Which], touched: &[usize]) -> bool {
        let touched = touched.iter().map(|t| {
            self.recorded
                .get(*t)
                .filter(|r| !r.is_empty())
                .map_or(&[][..], Vec::as_slice)
        });
        if touched.clone().any(|r| r.is_empty()) {
            return false;
        }
        which.iter().chain(touched.flatten()).all(|w| match *w {
            Which::Ancestor(i) => {
                let (p, seen) = &self.ancestors[i];
                Seen::lstat(p) == *seen
            }
            Which::Rule(i) => {
                let (p, seen) = &self.rules[i];
                Seen::rule_now(p) == *seen
            }
        })
    }

    /// Records that the rule for `path` was made from a descriptor with `meta`, or (`None`)
    /// that none was made because the path could not be opened without a link.
    pub(crate) fn rule(&mut self, path: &Path, meta: Option<&std::fs::Metadata>) {
        if let Some(c) = c_path(path) {
            let seen = meta.map_or(Seen::NoRule, Seen::of_meta);
            self.rules.push((c, seen));
        }
    }

    /// Whether every path still names what it named: a fresh build would make the same rules
    /// from the same inodes.
    ///
    /// False for a thread of another root than the building thread's. When nothing changed
    /// since the last check, this costs one `statx`, one `read` of the inotify queue and one
    /// `poll` of the mount table, whatever the number of paths (see [`watch`]); otherwise, or
    /// without the fast path, every path is looked at again.
    pub(crate) fn holds(&self) -> bool {
        // One `statx` (about 1 µs): a thread in another mount namespace, or under another
        // root, gets a ruleset built in its own view.
        let Some(root) = self
            .root
            .filter(|r| crate::mounts::thread_root() == Some(*r))
        else {
            return false;
        };
        let Some(w) = &self.watch else {
            return self.check_all(root);
        };
        match watch::fast(w, mount_generation(root), |unsure, touched| {
            self.still(unsure, touched)
        }) {
            Fast::Holds => true,
            Fast::Off => self.check_all(root),
            Fast::Recheck(seen) => {
                // The generation, then the watches, then the paths: a change after any of them
                // is seen by the next check.
                let Some(generation) = mount_generation(root) else {
                    return self.check_all(root);
                };
                let rewatched = watch::rewatch(w, &self.targets);
                let holds = self.check_all(root);
                if holds && rewatched {
                    watch::settle(w, Some(seen), generation, |local| self.unsure(local));
                }
                holds
            }
        }
    }

    /// Today's check of every path, one by one or by listing, from a thread of `root`.
    fn check_all(&self, root: Root) -> bool {
        #[cfg(test)]
        count(&FULL_CHECKS);
        // The mount table first: a listing does not show what is mounted on an entry.
        (self.groups.is_empty() || (self.mounts.is_some() && mount_generation(root) == self.mounts))
            && self
                .ancestors
                .iter()
                .all(|(p, seen)| Seen::lstat(p) == *seen)
            && self.groups.iter().all(Group::holds)
            && self
                .rules
                .iter()
                .all(|(p, seen)| Seen::rule_now(p) == *seen)
    }

    /// How many paths a check looks at one by one, and how many directories it lists.
    #[cfg(test)]
    pub(crate) fn len(&self) -> (usize, usize) {
        (self.ancestors.len() + self.rules.len(), self.groups.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn take(paths: &[&Path]) -> Fingerprint {
        let mut f = Fingerprint::begin(paths.iter().copied());
        for p in paths {
            let meta = crate::mounts::open_no_symlinks(p)
                .ok()
                .and_then(|fd| fd.metadata().ok());
            f.rule(p, meta.as_ref());
        }
        f.finish();
        f
    }

    /// The same changes as below, to one of many rule paths in one directory: the check lists
    /// the directory instead of looking at each path.
    #[test]
    fn a_listed_directory_shows_every_change_to_its_rule_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let mut paths: Vec<PathBuf> = (0..20).map(|i| base.join(format!("r{i:02}"))).collect();
        for p in &paths {
            std::fs::create_dir(p).unwrap();
        }
        let missing = base.join("missing");
        paths.push(missing.clone());
        let link = base.join("link");
        std::os::unix::fs::symlink(&paths[0], &link).unwrap();
        paths.push(link.clone());
        let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let f = take(&refs);
        assert!(f.holds());
        if crate::mounts::thread_root()
            .and_then(mount_generation)
            .is_none()
        {
            crate::test_kernel::missing("the listing half needs /proc/self/mountinfo");
            return;
        }
        assert_eq!(
            f.len(),
            (base.ancestors().count(), 1),
            "every rule path listed"
        );

        // Renamed away and recreated.
        std::fs::rename(&paths[3], base.join("old")).unwrap();
        std::fs::create_dir(&paths[3]).unwrap();
        assert!(!f.holds());
        std::fs::remove_dir(&paths[3]).unwrap();
        std::fs::rename(base.join("old"), &paths[3]).unwrap();
        assert!(f.holds());
        // Replaced by a symlink to itself.
        std::fs::rename(&paths[4], base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), &paths[4]).unwrap();
        assert!(!f.holds());
        std::fs::remove_file(&paths[4]).unwrap();
        std::fs::rename(base.join("real"), &paths[4]).unwrap();
        assert!(f.holds());
        // A missing path appears; a link (no rule) becomes a directory; a path goes.
        std::fs::create_dir(&missing).unwrap();
        assert!(!f.holds());
        std::fs::remove_dir(&missing).unwrap();
        std::fs::remove_file(&link).unwrap();
        std::fs::create_dir(&link).unwrap();
        assert!(!f.holds());
        std::fs::remove_dir(&link).unwrap();
        std::os::unix::fs::symlink(&paths[0], &link).unwrap();
        assert!(f.holds());
        std::fs::remove_dir(&paths[5]).unwrap();
        assert!(!f.holds());
    }

    #[test]
    fn holds_until_a_path_or_an_ancestor_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("a/root");
        std::fs::create_dir_all(&root).unwrap();
        let missing = base.join("a/missing");
        let f = take(&[&root, &missing]);
        assert!(f.holds());
        assert_eq!(f.len(), (base.ancestors().count() + 1 + 2, 0));

        // Renamed away and recreated: a new inode.
        std::fs::rename(&root, base.join("a/old")).unwrap();
        std::fs::create_dir(&root).unwrap();
        assert!(!f.holds());
        let f = take(&[&root, &missing]);
        assert!(f.holds());

        // A missing optional path that appears.
        std::fs::create_dir(&missing).unwrap();
        assert!(!f.holds());
        std::fs::remove_dir(&missing).unwrap();
        assert!(f.holds());

        // An ancestor replaced by a symlink to a directory holding the same inode.
        std::fs::rename(base.join("a"), base.join("b")).unwrap();
        std::os::unix::fs::symlink(base.join("b"), base.join("a")).unwrap();
        assert!(!f.holds());
    }

    /// What a lease's check costs, fast path against the full check (what every check cost
    /// before the fast path) side by side, for 1 and 500 roots as siblings and in 500
    /// directories: `cargo test -p sandbox --lib revalidation_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn revalidation_cost_per_root() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        type Layout = (&'static str, usize, fn(usize) -> String);
        let layouts: [Layout; 4] = [
            ("1 root", 1, |i| format!("one/r{i}")),
            ("500 sibling roots", 500, |i| format!("siblings/r{i:03}")),
            ("500 roots in 500 directories", 500, |i| {
                format!("apart/d{i:03}/r")
            }),
            ("1 root, 2 levels down", 1, |i| format!("deep/d{i}/r")),
        ];
        for (name, n, layout) in layouts {
            let roots: Vec<PathBuf> = (0..n).map(|i| base.join(layout(i))).collect();
            for r in &roots {
                std::fs::create_dir_all(r).unwrap();
            }
            let refs: Vec<&Path> = roots.iter().map(PathBuf::as_path).collect();
            let f = take(&refs);
            assert!(f.holds());
            let rounds = 400;
            let (mut fast, mut full) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
            for _ in 0..rounds {
                let t = std::time::Instant::now();
                assert!(f.holds());
                fast += t.elapsed();
                let t = std::time::Instant::now();
                assert!(f.check_all(f.root.expect("a root")));
                full += t.elapsed();
            }
            let us = |d: std::time::Duration| d.as_secs_f64() * 1e6 / rounds as f64;
            println!(
                "{name} ({:?} paths looked at, directories listed): a check costs {:.2} µs \
                 (full check: {:.2} µs, {:.2} µs per root)",
                f.len(),
                us(fast),
                us(full),
                us(full) / n as f64
            );
        }
    }

    /// `check` and the full checks and path lookups it made on this thread.
    fn counted<T>(check: impl FnOnce() -> T) -> (T, usize, usize) {
        let before = (FULL_CHECKS.with(|c| c.get()), LOOKUPS.with(|c| c.get()));
        let out = check();
        let after = (FULL_CHECKS.with(|c| c.get()), LOOKUPS.with(|c| c.get()));
        (out, after.0 - before.0, after.1 - before.1)
    }

    /// Asserts that `f` holds now by the fast path alone: no full check, no path looked up.
    #[track_caller]
    fn holds_fast(f: &Fingerprint) {
        // A check after a change (or the first) may be a full one; the next must not be.
        let _ = f.holds();
        assert_eq!(
            counted(|| f.holds()),
            (true, 0, 0),
            "held without any lookup"
        );
    }

    /// Whether this host gives the fast path (inotify, the mount table, a local file system
    /// for the temporary directory); a skip with the reason otherwise.
    fn fast_path_here(f: &Fingerprint) -> bool {
        if f.watch.is_none() {
            crate::test_kernel::missing("no inotify or no /proc/self/mountinfo");
            return false;
        }
        let _ = f.holds();
        if counted(|| f.holds()).2 != 0 {
            crate::test_kernel::missing("the temporary directory is not on a local file system");
            return false;
        }
        true
    }

    /// Runs `case` in a forked child (single-threaded: its own registry, its own inotify
    /// queue, nothing drained by another test's thread): its exit status, 0 when it returned
    /// true, 1 when false, 2 when it panicked.
    fn in_child(case: impl FnOnce() -> bool) -> i32 {
        // SAFETY: the child runs only `case` and leaves with _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(case)) {
                Ok(true) => 0,
                Ok(false) => 1,
                Err(_) => 2,
            };
            // SAFETY: ending the child without the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        }
    }

    #[test]
    fn nothing_changed_holds_by_one_read_and_every_change_is_seen() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("a/root");
        std::fs::create_dir_all(&root).unwrap();
        let f = take(&[&root]);
        if !fast_path_here(&f) {
            return;
        }
        holds_fast(&f);

        // Renamed away and recreated.
        std::fs::rename(&root, base.join("a/old")).unwrap();
        std::fs::create_dir(&root).unwrap();
        assert!(!f.holds());
        std::fs::remove_dir(&root).unwrap();
        std::fs::rename(base.join("a/old"), &root).unwrap();
        assert!(f.holds(), "the same inode again");
        holds_fast(&f);

        // Replaced by a symlink to itself.
        std::fs::rename(&root, base.join("a/real")).unwrap();
        std::os::unix::fs::symlink(base.join("a/real"), &root).unwrap();
        assert!(!f.holds());
        std::fs::remove_file(&root).unwrap();
        std::fs::rename(base.join("a/real"), &root).unwrap();
        holds_fast(&f);

        // The root's mode.
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(!f.holds());
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        holds_fast(&f);

        // The same mode set again (as a slot's return does to its scratch directory): only
        // that path is looked at again, no full check.
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (holds, full, lookups) = counted(|| f.holds());
        assert!(
            holds && full == 0 && (1..=2).contains(&lookups),
            "{lookups} lookups"
        );
        holds_fast(&f);

        // An ancestor's mode and owner.
        let a = base.join("a");
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o711)).unwrap();
        assert!(!f.holds());
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o755)).unwrap();
        holds_fast(&f);
        let (uid, gid) = (
            std::fs::metadata(&a).unwrap().uid(),
            std::fs::metadata(&a).unwrap().gid(),
        );
        if std::os::unix::fs::chown(&a, Some(uid + 1), None).is_ok() {
            assert!(!f.holds());
            std::os::unix::fs::chown(&a, Some(uid), Some(gid)).unwrap();
            holds_fast(&f);
        }

        // An ancestor renamed away, and a new one made in its place.
        std::fs::rename(&a, base.join("b")).unwrap();
        assert!(!f.holds());
        std::fs::create_dir_all(&root).unwrap();
        assert!(!f.holds());
        std::fs::remove_dir_all(&a).unwrap();
        std::fs::rename(base.join("b"), &a).unwrap();
        holds_fast(&f);

        // A file root's mode changed through a hard link in a directory that is not watched:
        // only the root's own watch sees it.
        let file = base.join("a/file");
        std::fs::write(&file, "").unwrap();
        std::fs::create_dir(base.join("elsewhere")).unwrap();
        std::fs::hard_link(&file, base.join("elsewhere/link")).unwrap();
        let g = take(&[&file]);
        holds_fast(&g);
        let link = base.join("elsewhere/link");
        std::fs::set_permissions(&link, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(!g.holds());

        // The top of the temporary tree, further up, replaced by a symlink to itself.
        std::fs::rename(&base, base.with_extension("moved")).unwrap();
        std::os::unix::fs::symlink(base.with_extension("moved"), &base).unwrap();
        let replaced = f.holds();
        std::fs::remove_file(&base).unwrap();
        std::fs::rename(base.with_extension("moved"), &base).unwrap();
        assert!(!replaced);
        holds_fast(&f);
    }

    /// A directory right below `/` is not watched for its attributes itself (see `watch`): `/`
    /// sees them under its name.
    #[test]
    fn a_directory_right_below_the_root_is_followed_by_the_roots_watch() {
        use std::os::unix::fs::PermissionsExt;
        let top = match tempfile::Builder::new()
            .prefix(".toolpolicy-fingerprint-")
            .tempdir_in("/")
        {
            Ok(top) => top,
            Err(e) => {
                crate::test_kernel::missing(&format!("no directory can be made in / ({e})"));
                return;
            }
        };
        let root = top.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let f = take(&[&root]);
        if !fast_path_here(&f) {
            return;
        }
        holds_fast(&f);
        let before = std::fs::metadata(top.path()).unwrap().permissions();
        std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        assert!(!f.holds());
        std::fs::set_permissions(top.path(), before).unwrap();
        holds_fast(&f);
        std::fs::rename(top.path(), top.path().with_extension("moved")).unwrap();
        let moved = f.holds();
        std::fs::rename(top.path().with_extension("moved"), top.path()).unwrap();
        assert!(!moved);
        holds_fast(&f);
    }

    /// Renaming other entries of a watched directory is no reason for a full check; two
    /// fingerprints share the watch of their common directory, which outlives either one.
    #[test]
    fn fingerprints_share_a_directory_and_follow_only_their_names() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let (r1, r2) = (base.join("d/r1"), base.join("d/r2"));
        std::fs::create_dir_all(&r1).unwrap();
        std::fs::create_dir_all(&r2).unwrap();
        let f1 = take(&[&r1]);
        let f2 = take(&[&r2]);
        if !fast_path_here(&f1) {
            return;
        }
        holds_fast(&f1);
        holds_fast(&f2);
        std::fs::create_dir(base.join("d/other")).unwrap();
        std::fs::rename(base.join("d/other"), base.join("d/another")).unwrap();
        assert_eq!(
            counted(|| f1.holds()),
            (true, 0, 0),
            "names it does not follow"
        );

        std::fs::rename(&r1, base.join("d/old")).unwrap();
        std::fs::create_dir(&r1).unwrap();
        assert_eq!(counted(|| f2.holds()), (true, 0, 0), "a change to r1 only");
        assert!(!f1.holds());
        drop(f1);
        holds_fast(&f2);
        std::fs::rename(&r2, base.join("d/old2")).unwrap();
        std::fs::create_dir(&r2).unwrap();
        assert!(
            !f2.holds(),
            "the shared watch outlived the first fingerprint"
        );

        // Alone in a child: a watch goes with the last fingerprint on it.
        let counts = in_child(|| {
            let f1 = take(&[&r1]);
            let one = watch::watch_count();
            let f2 = take(&[&r2]);
            let both = watch::watch_count();
            drop(f1);
            let after_first = watch::watch_count();
            drop(f2);
            both == one + 1 && after_first == both - 1 && watch::watch_count() == 0
        });
        assert_eq!(
            counts, 0,
            "one watch more for r2 alone; each released with its last user"
        );
    }

    /// A watched path that goes takes its watch with it (`IN_IGNORED`): the registry forgets
    /// it, and the next full check watches what is there instead.
    #[test]
    fn a_watch_the_kernel_dropped_is_forgotten_and_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        let code = in_child(|| {
            let f = take(&[&root]);
            let watched = watch::watch_count();
            // Held, as a ruleset holds its rules' inodes: its number is not given again.
            let _held = std::fs::File::open(&root);
            let gone = std::fs::remove_dir(&root).is_ok() && !f.holds();
            let forgotten = watch::watch_count() == watched - 1;
            let back = std::fs::create_dir(&root).is_ok() && !f.holds();
            gone && forgotten && back && watch::watch_count() == watched
        });
        assert_eq!(
            code, 0,
            "dropped with the directory, added again for the new one"
        );
    }

    /// A fingerprint whose watches could not all be added (as at `max_user_watches`) is checked
    /// in full every time, and still sees every change.
    #[test]
    fn a_fingerprint_whose_watch_failed_is_checked_in_full() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        watch::FAIL_WATCHES.with(|w| w.set(true));
        let f = take(&[&root]);
        watch::FAIL_WATCHES.with(|w| w.set(false));
        assert!(f.watch.is_none());
        for _ in 0..2 {
            let (holds, full, lookups) = counted(|| f.holds());
            assert!(holds && full == 1 && lookups == f.len().0);
        }
        std::fs::rename(&root, base.join("old")).unwrap();
        std::fs::create_dir(&root).unwrap();
        assert!(!f.holds());
    }

    /// `/proc` changes without inotify events (a process's directory goes when it is reaped):
    /// its paths are looked at on every check, the rest of the fingerprint still by the queue.
    #[test]
    fn paths_on_a_file_system_without_events_are_looked_at_every_time() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let proc_dir = PathBuf::from(format!("/proc/{}", child.id()));
        let f = take(&[&root, &proc_dir]);
        if f.watch.is_none()
            || crate::mounts::thread_root()
                .and_then(mount_generation)
                .is_none()
        {
            crate::test_kernel::missing("no inotify or no /proc/self/mountinfo");
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        let _ = f.holds();
        // `/proc` and the process's directory: two `lstat`s, no full check.
        assert_eq!(counted(|| f.holds()), (true, 0, 2));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!f.holds(), "the process's directory went");

        // A path that is not absolute has no fast path.
        let relative = take(&[Path::new("relative/path")]);
        assert!(relative.watch.is_none());
        assert_eq!(counted(|| relative.holds()).1, 1);
    }

    /// More events than the queue holds: the lost ones might have been anyone's, so every
    /// fingerprint is checked in full once.
    #[test]
    fn a_queue_overflow_makes_a_full_check() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        let max: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(16384);
        if max > 1 << 16 {
            crate::test_kernel::missing("max_queued_events too large to overflow in a test");
            return;
        }
        let ok = in_child(|| {
            let f = take(&[&root]);
            if f.watch.is_none() {
                return false;
            }
            let _ = f.holds();
            if counted(|| f.holds()) != (true, 0, 0) {
                return false;
            }
            // Entries the fingerprint does not follow, in a directory it watches.
            for i in 0..max / 2 + 8 {
                let junk = base.join(format!("junk{i}"));
                if std::fs::create_dir(&junk).is_err() || std::fs::remove_dir(&junk).is_err() {
                    return false;
                }
            }
            counted(|| f.holds()) == (true, 1, f.len().0) && counted(|| f.holds()) == (true, 0, 0)
        });
        assert_eq!(
            ok, 0,
            "the overflow made one full check, then the fast path again"
        );
    }

    /// In a forked, single-threaded child: a mount namespace of its own, nothing shared back.
    fn own_mount_namespace() -> bool {
        // SAFETY: plain arguments; only this child's mount namespace is changed.
        unsafe {
            libc::unshare(libc::CLONE_NEWNS) == 0
                && libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) == 0
        }
    }

    /// A mount over a root raises no inotify event: the mount table's generation catches it.
    #[test]
    fn a_mount_over_a_root_is_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        let ok = in_child(|| {
            if !own_mount_namespace() {
                // SAFETY: ends the child with the code read as "no mount namespace" below.
                unsafe { libc::_exit(3) };
            }
            let f = take(&[&root]);
            let _ = f.holds();
            if counted(|| f.holds()) != (true, 0, 0) {
                // SAFETY: ends the child with its own code.
                unsafe { libc::_exit(2) };
            }
            let c = c_path(&root).unwrap();
            // SAFETY: plain arguments.
            let mounted = unsafe {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    c.as_ptr(),
                    c"tmpfs".as_ptr(),
                    0,
                    std::ptr::null(),
                ) == 0
            };
            mounted && !f.holds()
        });
        if ok == 3 {
            crate::test_kernel::missing("no mount namespace of the test's own (run as root)");
            return;
        }
        assert_eq!(
            ok, 0,
            "a mount over the root is seen (2: no fast path before it)"
        );
    }

    /// A directory right below `/` that is a mount's root is not a child of `/` for inotify
    /// (its changes of attributes are not events of `/`'s): its own watch must ask for them.
    #[test]
    fn a_mount_right_below_the_root_is_watched_for_its_own_attributes() {
        use std::os::unix::fs::PermissionsExt;
        let top = match tempfile::Builder::new()
            .prefix(".toolpolicy-fingerprint-")
            .tempdir_in("/")
        {
            Ok(top) => top,
            Err(e) => {
                crate::test_kernel::missing(&format!("no directory can be made in / ({e})"));
                return;
            }
        };
        let top_path = top.path().to_path_buf();
        let ok = in_child(|| {
            let c = c_path(&top_path).unwrap();
            // SAFETY: plain arguments, in this child's own mount namespace.
            let own = own_mount_namespace()
                && unsafe {
                    libc::mount(
                        c"tmpfs".as_ptr(),
                        c.as_ptr(),
                        c"tmpfs".as_ptr(),
                        0,
                        std::ptr::null(),
                    ) == 0
                };
            if !own {
                // SAFETY: ends the child with the code read as "no mount namespace" below.
                unsafe { libc::_exit(3) };
            }
            let root = top_path.join("root");
            std::fs::create_dir(&root).unwrap();
            let f = take(&[&root]);
            let _ = f.holds();
            if counted(|| f.holds()) != (true, 0, 0) {
                // SAFETY: ends the child with its own code.
                unsafe { libc::_exit(2) };
            }
            std::fs::set_permissions(&top_path, std::fs::Permissions::from_mode(0o711)).unwrap();
            !f.holds()
        });
        if ok == 3 {
            crate::test_kernel::missing("no mount namespace of the test's own (run as root)");
            return;
        }
        assert_eq!(
            ok, 0,
            "a mode change of a mount right below / is seen (2: no fast path before it)"
        );
    }

    /// A forked child checks in full (the registry is the parent's) and does not read the
    /// parent's queue: a change the child makes and undoes is still an event for the parent,
    /// which looks at the changed directory again.
    #[test]
    fn a_forked_child_checks_in_full_and_leaves_the_parents_queue() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("a/root");
        std::fs::create_dir_all(&root).unwrap();
        let f = take(&[&root]);
        if !fast_path_here(&f) {
            return;
        }
        holds_fast(&f);
        let a = base.join("a");
        let ok = in_child(|| {
            let (first, full, _) = counted(|| f.holds());
            let set = |mode| std::fs::set_permissions(&a, std::fs::Permissions::from_mode(mode));
            let changed = set(0o700).is_ok() && !f.holds();
            let back = set(0o755).is_ok() && f.holds();
            first && full == 1 && changed && back
        });
        assert_eq!(ok, 0, "the child checked in full and saw its change");
        let (holds, full, lookups) = counted(|| f.holds());
        assert!(
            holds && full == 0 && lookups > 0,
            "the child's change was left in the parent's queue"
        );
        holds_fast(&f);
    }

    #[test]
    fn a_rule_path_replaced_by_a_symlink_to_itself_no_longer_holds() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        let f = take(&[&root]);
        std::fs::rename(&root, base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), &root).unwrap();
        assert!(!f.holds());
        // So does a permission change of an ancestor.
        std::fs::remove_file(&root).unwrap();
        std::fs::rename(base.join("real"), &root).unwrap();
        assert!(f.holds());
        use std::os::unix::fs::PermissionsExt;
        let before = std::fs::metadata(&base).unwrap().permissions();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o711)).unwrap();
        assert!(!f.holds());
        std::fs::set_permissions(&base, before).unwrap();
        assert!(f.holds());
    }
}
