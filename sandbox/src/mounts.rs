//! The strict profile's filesystem view, built in a fresh mount namespace.
//!
//! The new root is a tmpfs that holds only: the read roots (read-only binds), the write roots
//! (read-write binds), the tool binary, a private `/tmp`, a fresh `/proc`, a curated `/dev`
//! (null, zero, full, random, urandom, a private `/dev/shm` and a new devpts instance for
//! `/dev/pts` and `/dev/ptmx`) and the egress resolver files. Everything else of the host
//! (`/run` and its sockets, `/home`, `/root`, `/var`, `/sys`) is simply absent.
//!
//! Building the view never creates, removes or changes anything of the host. The resolver files
//! ([`MountOp::File`]) are placed where their path leads in the view, symlinks followed inside
//! the view as the tool would follow them: bound over the entry found there, or, where it is
//! missing, over a new file created only on a tmpfs of the view's own; a missing file whose
//! directory is a host bind (a root that covers `/etc`) refuses the run ([`PlaceError`]).
//!
//! A declared root shows the host tree it names, always: every bind source is cloned
//! (`open_tree`) before anything of the view is mounted, so no mount of the sandbox's own can
//! end up inside a recursive bind; and when a root holds `/tmp` (`/tmp/**`, `/**`) the tool sees
//! the host's `/tmp` with the declared rights, not a private one.
//!
//! Every tmpfs is sized: the private `/tmp` and `/dev/shm` are two directories of one tmpfs of
//! [`crate::plan::scratch_bytes`] (so together they hold at most `limits.memory_bytes`), the
//! staging root and `/dev` hold only mount points and links (a few KiB, read-only once built).
//!
//! Binds are `nosuid,nodev` and, unless exec = allow, `noexec` except for the library
//! directories and the individually bound executables (the tool, allowed programs, their
//! interpreters): a program copied into a write root cannot be mapped executable, not even by
//! the dynamic loader.
//!
//! What a declared root costs (hundreds of roots are a use case): one `openat2` that refuses
//! symlinks, one `open_tree_attr` (Linux 6.15; `open_tree` + `mount_setattr` before) that clones
//! the host tree with its flags already set on every mount of the copy, one `mkdir` of the
//! mount point and one `move_mount`. A copy carries its flags before it is attached, so the binds
//! attached inside it later keep their own, and nothing is set twice. The descriptor of each bind
//! is kept ([`BoundSources`]) for its Landlock rule.
//!
//! A root runner does not pay that per run: the same view's `/`, with every host bind, link and
//! the `/dev` tmpfs, is built once per prepared policy as a detached tree ([`template`]). Each
//! run is lent a mount namespace of the runner's that holds it (`view_ns`) and adds only its
//! own mounts there; where no such namespace can be made, the run clones the
//! tree in one call into a namespace of its own ([`enter_copy`]). [`enter`] is the path of every
//! other runner, and of plans a template cannot hold.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub(crate) mod held;
mod lent_pts;
mod lent_user;
mod place;
pub mod template;
pub(crate) mod view_ns;
pub use place::PlaceError;

/// The size of the `/dev` tmpfs: it holds only mount points and links.
pub const DEV_TMPFS_BYTES: u64 = 64 << 10;

/// One step of the view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MountOp {
    /// Bind a host path at the same path.
    Bind {
        /// Canonical host path (no symlinks).
        path: PathBuf,
        /// Read-write.
        write: bool,
        /// Executable (no `noexec`).
        exec: bool,
        /// A device node (no `nodev`).
        device: bool,
        /// Skip when the host path is missing.
        optional: bool,
    },
    /// A fresh tmpfs for mount points and links (like `/dev`), read-only once the view is
    /// built.
    Tmpfs {
        /// Where.
        path: PathBuf,
        /// Executable (exec = allow only).
        exec: bool,
        /// Its size.
        size_bytes: u64,
    },
    /// The tool's private scratch memory: one tmpfs of `size_bytes`, shown at `/dev/shm` and,
    /// unless a declared root holds the host's `/tmp`, at `/tmp` (both mode 1777).
    Scratch {
        /// The size of the tmpfs, shared by both.
        size_bytes: u64,
        /// Also the private `/tmp`.
        tmp: bool,
        /// Executable (exec = allow only).
        exec: bool,
    },
    /// A new devpts instance at `/dev/pts` (ptys of the sandbox only), with `/dev/ptmx`.
    Devpts,
    /// A fresh procfs for the new pid namespace.
    Proc,
    /// A symlink, recreated where the host has one outside every bind (e.g. `/bin -> usr/bin`).
    Symlink {
        /// Where.
        path: PathBuf,
        /// Its target, as the host's.
        target: PathBuf,
    },
    /// A path inside a write bind, bound over itself after it: read-only for a protected path
    /// ([`policy_runtime::protected`]: writes and truncation fail with `EROFS`; being a mount
    /// point, it cannot be unlinked, renamed or replaced, `EBUSY`, nor hard-linked elsewhere,
    /// `EXDEV`), or read-write for a directory between the write root and a protected path, which
    /// is pinned as a mount point so that it cannot be renamed or removed (`EBUSY`) to move the
    /// protected path away.
    Keep {
        /// Canonical host path (no symlinks).
        path: PathBuf,
        /// Read-only (the protected path) rather than read-write (a directory pinned).
        read_only: bool,
        /// Executable (no `noexec`), as the write root around it.
        exec: bool,
    },
    /// A read-only file with this content, bound over the entry the path leads to in the view
    /// (symlinks followed inside the view), or over a new file where that entry is missing and
    /// its directory is the view's own; never created in a host directory (see [`PlaceError`]).
    File {
        /// Where.
        path: PathBuf,
        /// The bytes.
        content: Vec<u8>,
    },
}

impl MountOp {
    /// Where the step puts something in the view.
    pub(crate) fn target(&self) -> &Path {
        match self {
            MountOp::Bind { path, .. }
            | MountOp::Keep { path, .. }
            | MountOp::Tmpfs { path, .. }
            | MountOp::Symlink { path, .. }
            | MountOp::File { path, .. } => path,
            MountOp::Proc => Path::new("/proc"),
            MountOp::Scratch { tmp: true, .. } => Path::new("/tmp"),
            MountOp::Scratch { tmp: false, .. } => Path::new("/dev/shm"),
            MountOp::Devpts => Path::new("/dev/pts"),
        }
    }
}

/// Adds a bind of `path` (following symlinks) and the symlinks on the way to it.
pub fn add_bind(ops: &mut Vec<MountOp>, path: &Path, write: bool, exec: bool, device: bool) {
    // Already canonical (one system call): no symlink on the way to copy.
    let (canonical, links) = if crate::canonical::is_canonical(path) {
        (path.to_path_buf(), false)
    } else {
        match std::fs::canonicalize(path) {
            Ok(c) => (c, true),
            Err(_) => return,
        }
    };
    let mut prefix = PathBuf::from("/");
    for comp in path.components().skip(1).take_while(|_| links) {
        prefix.push(comp);
        if let Ok(target) = std::fs::read_link(&prefix) {
            let op = MountOp::Symlink {
                path: prefix.clone(),
                target,
            };
            if !ops.contains(&op) {
                ops.push(op);
            }
            // The rest of the path is reached through the link; the bind below is at the
            // canonical path, so deeper links need no copy.
            break;
        }
    }
    ops.push(MountOp::Bind {
        path: canonical,
        write,
        exec,
        device,
        optional: true,
    });
}

/// Sorts and prunes: parents before children; a read-only bind inside a bind with the same
/// or more rights is dropped; a read-only bind inside a write bind is dropped (write implies
/// read, and the nested bind would take the write away).
pub fn normalize(ops: &mut Vec<MountOp>) {
    // Every bind's rights, by path: a bind is checked against the binds at its own path and at
    // each of its ancestors, so hundreds of declared roots cost a few lookups each, not a scan
    // of all the others.
    let mut binds: std::collections::HashMap<PathBuf, Vec<(bool, bool)>> =
        std::collections::HashMap::new();
    for op in ops.iter() {
        if let MountOp::Bind {
            path,
            write,
            exec,
            device: false,
            ..
        } = op
        {
            binds.entry(path.clone()).or_default().push((*write, *exec));
        }
    }
    let mut seen = std::collections::HashSet::new();
    ops.retain(|op| {
        let MountOp::Bind {
            path,
            write,
            exec,
            device: false,
            ..
        } = op
        else {
            return true;
        };
        if !seen.insert((path.clone(), *write, *exec)) {
            return false;
        }
        // Dropped when another bind at or above it grants at least as much.
        !path.ancestors().any(|p| {
            binds.get(p).is_some_and(|rights| {
                rights.iter().any(|&(w, x)| {
                    (p != path || (w, x) != (*write, *exec)) && w >= *write && x >= *exec
                })
            })
        })
    });
    ops.sort_by_key(|op| match op {
        // Symlinks after the binds: they must not turn into directories that binds then create.
        MountOp::Symlink { .. } => (1, 0),
        // Files last: their paths are followed through the view as the tool will see it, links
        // included.
        MountOp::File { .. } => (2, op.target().components().count()),
        _ => (0, op.target().components().count()),
    });
}

/// The mount id, device and inode of the calling thread's root directory: what its mount
/// namespace and `chroot` make of `/`. A new mount namespace copies every mount under a new
/// id, and `chroot` or `pivot_root` moves the root, so a view built for one identity is not
/// the view of another (the strict template, the hardened zygote's confinement).
pub(crate) fn thread_root() -> Option<(u64, u64, u64)> {
    // Linux 6.8's ids are never reused; older kernels give the reusable `STATX_MNT_ID`, whose
    // value is not reused while the zygote holding the old namespace lives.
    const STATX_MNT_ID_UNIQUE: u32 = 0x4000;
    // SAFETY: an all-zero statx is valid; the call fills it.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and struct.
    let r = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c"/".as_ptr(),
            0,
            libc::STATX_INO | libc::STATX_MNT_ID | STATX_MNT_ID_UNIQUE,
            &mut st,
        )
    };
    let with_mount = st.stx_mask & (libc::STATX_MNT_ID | STATX_MNT_ID_UNIQUE) != 0;
    (r == 0 && with_mount).then(|| {
        let dev = libc::makedev(st.stx_dev_major, st.stx_dev_minor);
        (st.stx_mnt_id, dev, st.stx_ino)
    })
}

fn cstr(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("path {} has a NUL", p.display()))
}

/// What `stat` shows of an inode that a run may change and so leave to the next run of a lent
/// namespace ([`lent_pts`], [`view_ns`]'s scratch): its mode, owner, group, links and size, and
/// its modification and change times (seconds, nanoseconds). Its access time is left to each
/// caller: a listing moves it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct InodeStamp {
    meta: (libc::mode_t, libc::uid_t, libc::gid_t, u64, i64),
    times: [(i64, i64); 2],
}

impl InodeStamp {
    /// The stamp of `name` under the directory `dir` (`c""` with `AT_EMPTY_PATH`: `dir`
    /// itself), links not followed, and its access time.
    fn at(
        dir: RawFd,
        name: &std::ffi::CStr,
        flags: libc::c_int,
    ) -> Option<(InodeStamp, (i64, i64))> {
        // SAFETY: fstatat fills a zeroed struct, from a descriptor and a C string.
        let st = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            let flags = flags | libc::AT_SYMLINK_NOFOLLOW;
            (libc::fstatat(dir, name.as_ptr(), &mut st, flags) == 0).then_some(st)?
        };
        let stamp = InodeStamp {
            meta: (st.st_mode, st.st_uid, st.st_gid, st.st_nlink, st.st_size),
            times: [
                (st.st_mtime, st.st_mtime_nsec),
                (st.st_ctime, st.st_ctime_nsec),
            ],
        };
        Some((stamp, (st.st_atime, st.st_atime_nsec)))
    }
}

/// For tests of what a run may leave: sets the modification time of `name` under `dir` (`c""`:
/// `dir` itself) to `seconds`, its access time left as it is.
#[cfg(test)]
fn set_mtime_at(dir: RawFd, name: &std::ffi::CStr, seconds: i64) {
    let times = [
        libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        libc::timespec {
            tv_sec: seconds,
            tv_nsec: 0,
        },
    ];
    let flags = if name.is_empty() {
        libc::AT_EMPTY_PATH
    } else {
        0
    };
    // SAFETY: utimensat with a descriptor, a C string and two timespecs.
    let rc = unsafe { libc::utimensat(dir, name.as_ptr(), times.as_ptr(), flags) };
    assert_eq!(
        rc,
        0,
        "utimensat {name:?}: {}",
        std::io::Error::last_os_error()
    );
}

fn os_err(what: String) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

fn mount(
    src: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Result<(), String> {
    let src_c = src.map(cstr).transpose()?;
    let target_c = cstr(target)?;
    let fstype_c = fstype.map(|f| CString::new(f).unwrap());
    let data_c = data.map(|d| CString::new(d).unwrap());
    // SAFETY: all pointers are valid C strings or null.
    let rc = unsafe {
        libc::mount(
            src_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            target_c.as_ptr(),
            fstype_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            flags,
            data_c
                .as_ref()
                .map_or(std::ptr::null(), |c| c.as_ptr() as *const libc::c_void),
        )
    };
    if rc != 0 {
        return Err(os_err(format!(
            "mount {} on {}",
            src.map_or_else(
                || fstype.unwrap_or("?").to_string(),
                |s| s.display().to_string()
            ),
            target.display()
        )));
    }
    Ok(())
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const OPEN_TREE_CLONE: libc::c_uint = 1;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

fn set_attr(target: &Path, recursive: bool, set: u64, clear: u64) -> Result<(), String> {
    let c = cstr(target)?;
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    setattr_retrying(libc::AT_FDCWD, &c, flags, set, clear)
        .map_err(|e| format!("mount_setattr on {}: {e}", target.display()))
}

/// `mount_setattr`, retried without clearing when a flag cannot be cleared.
fn setattr_retrying(
    dirfd: libc::c_int,
    path: &CString,
    flags: libc::c_uint,
    set: u64,
    clear: u64,
) -> std::io::Result<()> {
    let call = |clear: u64| {
        let attr = MountAttr {
            attr_set: set,
            attr_clr: clear,
            propagation: 0,
            userns_fd: 0,
        };
        // SAFETY: attr is a valid mount_attr of the size passed; path is a C string.
        unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                dirfd,
                path.as_ptr(),
                flags,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        }
    };
    if call(clear) == 0 {
        return Ok(());
    }
    // A flag the host locked (e.g. a noexec host mount) cannot be cleared; keeping it is
    // stricter, so retry without clearing.
    if clear != 0 && call(0) == 0 {
        return Ok(());
    }
    Err(std::io::Error::last_os_error())
}

/// The mount attributes of a bind, as (set, clear): always `nosuid`, `nodev` unless a device,
/// read-only unless `write`, `noexec` unless `exec`.
fn bind_attrs(write: bool, exec: bool, device: bool) -> (u64, u64) {
    let mut set = MOUNT_ATTR_NOSUID;
    let mut clear = 0;
    if !device {
        set |= MOUNT_ATTR_NODEV;
    }
    if write {
        clear |= MOUNT_ATTR_RDONLY;
    } else {
        set |= MOUNT_ATTR_RDONLY;
    }
    if exec {
        clear |= MOUNT_ATTR_NOEXEC;
    } else {
        set |= MOUNT_ATTR_NOEXEC;
    }
    (set, clear)
}

/// A detached copy of the mount tree at `source` (every mount below it too) with the bind's
/// attributes already set on the whole copy, before it is attached anywhere: one
/// `open_tree_attr` (Linux 6.15) where the kernel has it, else `open_tree` then
/// `mount_setattr` on the detached copy (also when a flag the host locked cannot be cleared).
/// Setting them before attaching leaves the binds attached inside it later with their own.
fn clone_bind(source: &std::fs::File, set: u64, clear: u64) -> std::io::Result<std::fs::File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    /// `open_tree_attr`: one number on every architecture since Linux 6.15.
    const SYS_OPEN_TREE_ATTR: libc::c_long = 467;
    let empty = CString::default();
    let flags = OPEN_TREE_CLONE
        | libc::O_CLOEXEC as libc::c_uint
        | AT_RECURSIVE
        | libc::AT_EMPTY_PATH as libc::c_uint;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: open_tree_attr on an open descriptor with an empty path and a valid mount_attr
    // of the size passed.
    let fd = unsafe {
        libc::syscall(
            SYS_OPEN_TREE_ATTR,
            source.as_raw_fd(),
            empty.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if fd >= 0 {
        // SAFETY: a new descriptor owned here.
        return Ok(unsafe { std::fs::File::from_raw_fd(fd as i32) });
    }
    clone_then_set(source, set, clear)
}

/// [`clone_bind`] in two calls: for kernels before 6.15, and when a flag the host locked makes
/// `open_tree_attr` fail (here it is kept, as [`set_attr`] keeps it).
fn clone_then_set(source: &std::fs::File, set: u64, clear: u64) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let tree = clone_tree(source)?;
    setattr_retrying(
        tree.as_raw_fd(),
        &CString::default(),
        AT_RECURSIVE | libc::AT_EMPTY_PATH as libc::c_uint,
        set,
        clear,
    )?;
    Ok(tree)
}

/// Attaches a tree made by [`clone_bind`] at `path` under the staging `root`, creating the
/// mount point (a directory or an empty file, as the source).
/// Returns whether the source is a directory.
fn attach_bind(source: &std::fs::File, root: &Path, path: &Path) -> Result<bool, String> {
    let target = under(root, path);
    let is_dir = source.metadata().map(|m| m.is_dir()).unwrap_or(false);
    if is_dir {
        mkdir_p(&target)?;
    } else {
        touch(&target)?;
    }
    attach_tree(source, &target)?;
    Ok(is_dir)
}

/// The bind mounts of a built view, by path: for each, a descriptor of the mount's root (the
/// host's file or directory at that path, or the sandbox's own file placed there, as the view
/// shows it) and whether it is a directory.
/// The Landlock rules for these paths are made from them ([`crate::landlock_rules`]), so a
/// declared root is opened once per run, not once for its mount and again for its rule.
///
/// Only the mount on top at a path is kept: a path that a later step of the view mounted over
/// (or over one of its parents) is dropped, so a rule made from here always names what the tool
/// sees there.
#[derive(Debug, Default)]
pub struct BoundSources(std::collections::HashMap<PathBuf, (std::fs::File, bool)>);

impl BoundSources {
    /// The descriptor shown at `path` and whether it is a directory, when a bind put it there.
    pub fn get(&self, path: &Path) -> Option<(std::os::fd::BorrowedFd<'_>, bool)> {
        use std::os::fd::AsFd;
        self.0.get(path).map(|(file, dir)| (file.as_fd(), *dir))
    }

    /// How many binds are held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no bind is held.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The descriptors held.
    fn raw_fds(&self) -> impl Iterator<Item = std::os::fd::RawFd> + '_ {
        use std::os::fd::AsRawFd;
        self.0.values().map(|(file, _)| file.as_raw_fd())
    }

    /// Keeps only the descriptors of the paths `keep` names (those a Landlock rule is made
    /// from); a run's child inherits, and closes, each one kept.
    pub(crate) fn retain(&mut self, keep: impl Fn(&Path) -> bool) {
        self.0.retain(|path, _| keep(path));
    }

    /// Drops the binds at or below `target`, which a later step mounted over.
    fn covered_by(&mut self, target: &Path) {
        self.0.retain(|path, _| !path.starts_with(target));
    }
}

fn mkdir_p(path: &Path) -> Result<(), String> {
    std::fs::create_dir_all(path).map_err(|e| format!("mkdir {}: {e}", path.display()))
}

fn touch(path: &Path) -> Result<(), String> {
    // One call when the parent exists (it mostly does; `mknod` makes a regular file without
    // opening it, so there is no descriptor to close): an existing entry of any kind, a
    // dangling symlink included, is left as it is.
    let c = cstr(path)?;
    let create = || {
        // SAFETY: mknod of a regular file at a valid C string.
        if unsafe { libc::mknod(c.as_ptr(), libc::S_IFREG | 0o644, 0) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    let created = match create() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                mkdir_p(parent)?;
            }
            create()
        }
        other => other,
    };
    match created {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(format!("create mount point {}: {e}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Opens a bind source without following any symlink. Sources are canonical when planned, so
/// a symlink here means someone (a earlier run with a write root above a read root, say)
/// swapped a directory for a link to widen what the next run sees.
pub fn open_no_symlinks(path: &Path) -> std::io::Result<std::fs::File> {
    const RESOLVE_NO_SYMLINKS: u64 = 0x04;
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: RESOLVE_NO_SYMLINKS,
    };
    // SAFETY: openat2 with a valid path and open_how of the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        // A process under `confine_self` (or any seccomp filter that hides `openat2` so that
        // the flags stay visible) gets ENOSYS: walk the path one component at a time instead.
        if e.raw_os_error() == Some(libc::ENOSYS) {
            return open_no_symlinks_stepwise(path);
        }
        return Err(e);
    }
    use std::os::fd::FromRawFd;
    // SAFETY: a new fd owned here.
    Ok(unsafe { std::fs::File::from_raw_fd(fd as i32) })
}

/// `openat(dir, name, O_PATH | O_NOFOLLOW | extra)`: the entry itself (a symlink is opened, not
/// followed); `dir` is a directory descriptor or `AT_FDCWD`.
fn open_entry_at(
    dir: libc::c_int,
    name: &std::ffi::CStr,
    extra: libc::c_int,
) -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: a valid C string and a directory fd (or AT_FDCWD).
    let fd = unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC | extra,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new fd owned here.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// [`open_no_symlinks`] without `openat2`: each component is opened relative to the one
/// before it with `O_NOFOLLOW`, so no link is followed and nothing can be swapped between the
/// steps; a link as the last component is refused with `ELOOP`, as `openat2` would.
fn open_no_symlinks_stepwise(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    if !path.is_absolute() {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    let open = |dir: libc::c_int, name: &CString| {
        let file = open_entry_at(dir, name, 0)?;
        if file.metadata()?.file_type().is_symlink() {
            return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
        }
        Ok(file)
    };
    let mut current = open(libc::AT_FDCWD, &CString::new("/").expect("no NUL"))?;
    for part in path.components().skip(1) {
        let name = match part {
            std::path::Component::Normal(name) => name,
            // `.` and `..` are resolved by the kernel as openat2 would; a plan's paths have
            // neither, but a `..` must not climb through a link either, so refuse it.
            std::path::Component::CurDir => continue,
            _ => return Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
        };
        let name = CString::new(name.as_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        current = open(current.as_raw_fd(), &name)?;
    }
    Ok(current)
}

/// Whether the nearest existing ancestor of `at` (what a `create_dir_all` would build on) lies
/// on one of `own_devices`, the filesystems the view mounted itself, not a host bind.
fn on_own_filesystem(at: &Path, own_devices: &[u64]) -> bool {
    use std::os::unix::fs::MetadataExt;
    at.ancestors()
        .skip(1)
        .find_map(|a| std::fs::symlink_metadata(a).ok())
        .is_some_and(|m| own_devices.contains(&m.dev()))
}

/// Makes the link `at` → `target` unless something is there already, and only on the view's own
/// filesystems ([`on_own_filesystem`]). Mostly the parent is a directory the view made: then it
/// is one `lstat` and one `symlink`, which leaves an existing entry as it is (`EEXIST`).
fn copy_link(at: &Path, target: &Path, own_devices: &[u64]) {
    use std::os::unix::fs::MetadataExt;
    match at.parent().and_then(|p| std::fs::symlink_metadata(p).ok()) {
        Some(parent) if parent.is_dir() => {
            if own_devices.contains(&parent.dev()) {
                let _ = std::os::unix::fs::symlink(target, at);
            }
        }
        _ => {
            if std::fs::symlink_metadata(at).is_err() && on_own_filesystem(at, own_devices) {
                if let Some(parent) = at.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                let _ = std::os::unix::fs::symlink(target, at);
            }
        }
    }
}

fn under(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// For a [`MountOp::Bind`] or [`MountOp::Keep`]: its host source opened without following a
/// symlink, and a detached copy of the tree there with the bind's flags set; `None` for an
/// optional path that is missing (and for every other step). Refuses a kept path that is gone
/// or became a link, and a source that holds a symlink now.
fn bind_source(op: &MountOp) -> Result<Option<(std::fs::File, std::fs::File)>, String> {
    let open_and_copy = |path: &Path, set: u64, clear: u64| {
        let host = open_no_symlinks(path)?;
        let copy = clone_bind(&host, set, clear)?;
        Ok::<_, std::io::Error>((host, copy))
    };
    match op {
        MountOp::Keep {
            path,
            read_only,
            exec,
        } => {
            let (set, clear) = bind_attrs(!read_only, *exec, false);
            match open_and_copy(path, set, clear) {
                Ok(f) => Ok(Some(f)),
                // Kept paths were checked when the plan was made: one that is gone or became
                // a symlink now cannot be kept, so the run is refused.
                Err(e) => Err(format!(
                    "protected path {}: {e} (it was a plain existing path when the plan was made)",
                    path.display()
                )),
            }
        }
        MountOp::Bind {
            path,
            optional,
            write,
            exec,
            device,
        } => {
            let (set, clear) = bind_attrs(*write, *exec, *device);
            match open_and_copy(path, set, clear) {
                Ok(f) => Ok(Some(f)),
                Err(e) if *optional && e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
                Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(format!(
                    "{} contains a symlink now; it was a plain path when the plan was made (refusing to follow it)",
                    path.display()
                )),
                Err(e) => Err(format!("open {}: {e}", path.display())),
            }
        }
        _ => Ok(None),
    }
}

/// The links of `/dev` every view has, under the view's root.
const DEV_LINKS: [(&str, &str); 4] = [
    ("dev/fd", "/proc/self/fd"),
    ("dev/stdin", "/proc/self/fd/0"),
    ("dev/stdout", "/proc/self/fd/1"),
    ("dev/stderr", "/proc/self/fd/2"),
];

/// Makes every mount of the child's new namespace private: nothing the view mounts propagates
/// back to the host's.
fn make_private() -> Result<(), String> {
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )
}

/// Builds the view and pivots into it. Runs in the child that is already in the new user,
/// mount and pid namespaces. Returns the binds' descriptors ([`BoundSources`]), which stay open
/// until dropped.
pub fn enter(ops: &[MountOp]) -> Result<BoundSources, String> {
    make_private()?;

    // Clone every bind source first, as a detached tree: the staging root is mounted over /tmp,
    // which would hide host paths below it, and a recursive bind made later of a tree holding
    // /tmp (a declared `/tmp/**` or `/**`) would show the staging root there instead of the
    // host's /tmp.
    let mut sources: Vec<Option<std::fs::File>> = Vec::with_capacity(ops.len());
    for op in ops {
        sources.push(bind_source(op)?.map(|(_, copy)| copy));
    }

    let root = Path::new("/tmp");
    mount(
        Some(Path::new("tmpfs")),
        root,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=0755,size=1m"),
    )?;
    // The view's root, from which the resolver files' paths are followed, and the devices of
    // the filesystems the view mounts itself: the only ones where a missing file may be made.
    let root_dir = std::fs::File::open(root).map_err(|e| format!("open the view's root: {e}"))?;
    let device = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p)
            .map(|m| m.dev())
            .map_err(|e| format!("stat {}: {e}", p.display()))
    };
    let mut own_devices = vec![device(root)?];
    let mut host_binds: Vec<PathBuf> = Vec::new();

    let mut staged_files: Option<PathBuf> = None;
    let mut staged_count = 0;
    let mut attrs: Vec<(PathBuf, u64, u64)> = Vec::new();
    let mut read_only: Vec<PathBuf> = Vec::new();
    let mut bound = BoundSources::default();
    for (op, source) in ops.iter().zip(sources) {
        match op {
            MountOp::Bind { path, .. } | MountOp::Keep { path, .. } => {
                let Some(source) = source else { continue };
                let is_dir = attach_bind(&source, root, path)?;
                bound.0.insert(path.clone(), (source, is_dir));
                host_binds.push(path.clone());
                continue;
            }
            MountOp::Symlink { .. } => {}
            _ => bound.covered_by(op.target()),
        }
        match op {
            MountOp::Bind { .. } | MountOp::Keep { .. } => {}
            MountOp::Tmpfs {
                path,
                exec,
                size_bytes,
            } => {
                let target = under(root, path);
                tmpfs(&target, *exec, &format!("mode=0755,size={size_bytes}"))?;
                own_devices.push(device(&target)?);
                read_only.push(target);
            }
            MountOp::Scratch {
                size_bytes,
                tmp,
                exec,
            } => {
                for (target, flags) in scratch(root, *size_bytes, *tmp, *exec)? {
                    own_devices.push(device(&target)?);
                    attrs.push((target, flags, MOUNT_ATTR_RDONLY));
                }
            }
            MountOp::Devpts => devpts(root, true)?,
            MountOp::Proc => procfs(root)?,
            MountOp::File { path, content } => {
                let stage = match &staged_files {
                    Some(s) => s.clone(),
                    None => {
                        let s = root.join(".toolpolicy-files");
                        mkdir_p(&s)?;
                        mount(
                            Some(Path::new("tmpfs")),
                            &s,
                            Some("tmpfs"),
                            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                            Some("mode=0755,size=1m"),
                        )?;
                        staged_files = Some(s.clone());
                        s
                    }
                };
                staged_count += 1;
                let staged = stage.join(format!("{staged_count}"));
                std::fs::write(&staged, content)
                    .map_err(|e| format!("write {}: {e}", staged.display()))?;
                let staged = std::fs::File::open(&staged)
                    .map_err(|e| format!("open {}: {e}", staged.display()))?;
                // Where the tool will find it, links followed inside the view; nothing of a
                // host bind is removed or created (see `place`).
                let (placed, at) =
                    place::place_file(&root_dir, &own_devices, &host_binds, path, &staged)
                        .map_err(|e| e.to_string())?;
                bound.covered_by(&at);
                bound.0.insert(path.clone(), (placed, false));
            }
            MountOp::Symlink { path, target } => {
                let at = under(root, path);
                // Copies of the host's links on the way to a bind. Where the view shows a host
                // bind the host's own entry is already there; one missing there (removed since
                // the plan) is never made again on the host, only on the view's own filesystems.
                copy_link(&at, target, &own_devices);
            }
        }
    }
    if let Some(stage) = staged_files {
        let c = cstr(&stage)?;
        // SAFETY: valid C string.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        let _ = std::fs::remove_dir(&stage);
    }
    // /dev conveniences.
    for (link, target) in DEV_LINKS {
        let _ = std::os::unix::fs::symlink(target, root.join(link));
    }

    // Binds carry their attributes from the clone. These are the scratch mounts and staged
    // files, each set alone: declared roots inside the private /tmp are binds attached inside
    // it, and a recursive call would take their read-only flag away.
    for (target, set, clear) in &attrs {
        set_attr(target, false, *set, *clear)?;
    }
    for target in &read_only {
        set_attr(target, false, MOUNT_ATTR_RDONLY, 0)?;
    }
    set_attr(
        root,
        false,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        0,
    )?;

    pivot(root)?;
    Ok(bound)
}

/// A fresh procfs at `/proc` of the view.
fn procfs(root: &Path) -> Result<(), String> {
    let target = under(root, Path::new("/proc"));
    mkdir_p(&target)?;
    mount_proc(&target)
}

/// The fresh `/proc` of [`procfs`] on `target`, a directory that exists (a leased view's
/// mount point: no `mkdir` to try).
fn mount_proc(target: &Path) -> Result<(), String> {
    // Read-only: the tool's Landlock domain writes nothing there anyway, but a chmod of a
    // global entry (/proc/timer_list, /proc/sysrq-trigger) changes it in every procfs of the
    // host, and a root runner's tool owns those entries.
    mount(
        Some(Path::new("proc")),
        target,
        Some("proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
        None,
    )
}

/// Enters a view copied from a template ([`template`]): attaches the copy `tree` (made by the
/// caller, read-only and private) at the staging root, adds the per-run mounts of `ops` (the
/// scratch tmpfs, a fresh `/proc`, a devpts instance; their mount points and links are in the
/// template) and pivots into it. Runs where [`enter`] does.
/// `tmp`: copies of the template's entries of the private `/tmp`, attached in the run's scratch
/// at their paths.
pub fn enter_copy(
    ops: &[MountOp],
    tree: &std::fs::File,
    tmp: &[(PathBuf, std::fs::File)],
) -> Result<(), String> {
    make_private()?;
    let root = Path::new("/tmp");
    attach_tree(tree, root)?;
    per_run_mounts(root, ops, tmp)?;
    pivot(root)
}

/// The mounts each run makes for itself in a view under `root` whose mount points the template
/// holds: the scratch tmpfs (with the copies `tmp` of the template's `/tmp` entries inside it),
/// a devpts instance and `/proc`.
fn per_run_mounts(
    root: &Path,
    ops: &[MountOp],
    tmp: &[(PathBuf, std::fs::File)],
) -> Result<(), String> {
    let mut attrs = Vec::new();
    for op in ops {
        match op {
            MountOp::Scratch {
                size_bytes,
                tmp: private_tmp,
                exec,
            } => {
                attrs.extend(scratch(root, *size_bytes, *private_tmp, *exec)?);
                if *private_tmp {
                    for (path, copy) in tmp {
                        attach_bind(copy, root, path)?;
                    }
                }
            }
            MountOp::Devpts => devpts(root, false)?,
            MountOp::Proc => procfs(root)?,
            _ => {}
        }
    }
    for (target, set) in &attrs {
        set_attr(target, false, *set, MOUNT_ATTR_RDONLY)?;
    }
    Ok(())
}

/// Mounts the sized scratch tmpfs: at `/dev/shm` alone, or, when `tmp`, at `/tmp`, with its
/// `shm` directory bound at `/dev/shm` and its `tmp` directory bound over `/tmp` itself (the
/// tmpfs's root stays below that bind, out of every path's reach). Nothing is unmounted: a
/// detach makes the kernel wait for an RCU grace period, which takes milliseconds on a loaded
/// machine. Returns the mounts the tool sees, with the attributes they keep.
fn scratch(root: &Path, size: u64, tmp: bool, exec: bool) -> Result<Vec<(PathBuf, u64)>, String> {
    let mut flags = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if !exec {
        flags |= MOUNT_ATTR_NOEXEC;
    }
    let shm = root.join("dev/shm");
    if !tmp {
        // Sticky and world-writable, as every program expects.
        tmpfs(&shm, exec, &format!("mode=1777,size={size}"))?;
        return Ok(vec![(shm, flags)]);
    }
    let base = root.join("tmp");
    tmpfs(&base, exec, &format!("mode=0755,size={size}"))?;
    let fs = std::fs::File::open(&base).map_err(|e| format!("open {}: {e}", base.display()))?;
    sticky_dirs_at(&fs)?;
    mkdir_p(&shm)?;
    mount(Some(&base.join("shm")), &shm, None, libc::MS_BIND, None)?;
    mount(Some(&base.join("tmp")), &base, None, libc::MS_BIND, None)?;
    Ok(vec![(shm, flags), (base, flags)])
}

/// Makes the `shm` and `tmp` directories of the scratch tmpfs whose root `fs` is: sticky and
/// world-writable, as every program expects of both. Named from the descriptor (a detached
/// mount's, for a leased view) rather than through `/proc/self/fd`, whose lookup cost more
/// than the directories.
fn sticky_dirs_at(fs: &std::fs::File) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    for dir in [c"shm", c"tmp"] {
        // SAFETY: mkdirat and fchmodat relative to our own descriptor, with C strings.
        unsafe {
            if libc::mkdirat(fs.as_raw_fd(), dir.as_ptr(), 0o755) != 0 {
                return Err(os_err(format!("mkdir the scratch's {dir:?}")));
            }
            // The mode of `mkdirat` passes through the umask; the sticky bit needs a chmod.
            if libc::fchmodat(fs.as_raw_fd(), dir.as_ptr(), 0o1777, 0) != 0 {
                return Err(os_err(format!("chmod the scratch's {dir:?}")));
            }
        }
    }
    Ok(())
}

/// The most ptys the sandbox's devpts instance hands out: the host's pty budget
/// (`kernel.pty.max`) is shared by every instance.
pub const MAX_PTYS: u32 = 64;

/// A new devpts instance at `/dev/pts`, and `/dev/ptmx` pointing into it: the tool can open
/// ptys of its own and sees none of the host's.
fn devpts(root: &Path, link: bool) -> Result<(), String> {
    let target = root.join("dev/pts");
    mkdir_p(&target)?;
    mount_devpts(&target)?;
    if !link {
        return Ok(());
    }
    let ptmx = root.join("dev/ptmx");
    std::os::unix::fs::symlink("pts/ptmx", &ptmx)
        .map_err(|e| format!("link {}: {e}", ptmx.display()))
}

/// The devpts instance of [`devpts`] on `target`, a directory that exists.
fn mount_devpts(target: &Path) -> Result<(), String> {
    mount(
        Some(Path::new("devpts")),
        target,
        Some("devpts"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some(&format!(
            "newinstance,ptmxmode=0666,mode=0620,max={MAX_PTYS}"
        )),
    )
}

/// A detached copy of the mount tree at `source` (with every mount below it).
fn clone_tree(source: &std::fs::File) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let flags = OPEN_TREE_CLONE | AT_RECURSIVE | libc::AT_EMPTY_PATH as libc::c_uint;
    open_tree(source.as_raw_fd(), c"", flags)
}

/// `open_tree(dir, path, flags | O_CLOEXEC)`: with `OPEN_TREE_CLONE` a detached copy, without
/// it the mount at `path` itself (to move it).
fn open_tree(
    dir: std::os::fd::RawFd,
    path: &std::ffi::CStr,
    flags: libc::c_uint,
) -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    let flags = flags | libc::O_CLOEXEC as libc::c_uint;
    // SAFETY: open_tree with a C string; the new descriptor is owned below.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, dir, path.as_ptr(), flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned here.
    Ok(unsafe { std::fs::File::from_raw_fd(fd as i32) })
}

/// Attaches a tree made by [`clone_tree`] at `target`.
fn attach_tree(tree: &std::fs::File, target: &Path) -> Result<(), String> {
    move_tree(tree, libc::AT_FDCWD, &cstr(target)?, 0)
        .map_err(|e| format!("attach {}: {e}", target.display()))
}

/// Attaches a tree made by [`clone_bind`] over the entry `target` (an `O_PATH` descriptor),
/// with no path looked up again.
fn attach_onto(tree: &std::fs::File, target: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
    move_tree(tree, target.as_raw_fd(), c"", MOVE_MOUNT_T_EMPTY_PATH)
}

/// `move_mount` of the detached `tree` to `to_path` relative to `to_dir`.
fn move_tree(
    tree: &std::fs::File,
    to_dir: libc::c_int,
    to_path: &std::ffi::CStr,
    to_flags: libc::c_uint,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
    // SAFETY: move_mount of our detached tree (an empty source path) to a valid C path.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            to_dir,
            to_path.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | to_flags,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A fresh nosuid, nodev tmpfs at `target` (created if missing), noexec unless `exec`.
fn tmpfs(target: &Path, exec: bool, options: &str) -> Result<(), String> {
    mkdir_p(target)?;
    let mut flags = libc::MS_NOSUID | libc::MS_NODEV;
    if !exec {
        flags |= libc::MS_NOEXEC;
    }
    mount(
        Some(Path::new("tmpfs")),
        target,
        Some("tmpfs"),
        flags,
        Some(options),
    )
}

fn pivot(root: &Path) -> Result<(), String> {
    let c = cstr(root)?;
    let dot = CString::new(".").unwrap();
    // SAFETY: valid C strings; pivot_root(".", ".") stacks the old root on the new one, which
    // the detach then removes.
    unsafe {
        if libc::chdir(c.as_ptr()) != 0 {
            return Err(os_err("chdir to new root".into()));
        }
        if libc::syscall(libc::SYS_pivot_root, dot.as_ptr(), dot.as_ptr()) != 0 {
            return Err(os_err("pivot_root".into()));
        }
        if libc::umount2(dot.as_ptr(), libc::MNT_DETACH) != 0 {
            return Err(os_err("detach old root".into()));
        }
        let slash = CString::new("/").unwrap();
        if libc::chdir(slash.as_ptr()) != 0 {
            return Err(os_err("chdir /".into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_copied_only_onto_the_views_own_filesystems_and_never_over_an_entry() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        let own = std::fs::metadata(base).unwrap().dev();
        let target = Path::new("usr/bin");
        // Parent present: made on an own filesystem, not elsewhere.
        copy_link(&base.join("host"), target, &[own.wrapping_add(1)]);
        assert!(std::fs::symlink_metadata(base.join("host")).is_err());
        copy_link(&base.join("bin"), target, &[own]);
        assert_eq!(std::fs::read_link(base.join("bin")).unwrap(), target);
        // An existing entry is left as it is.
        std::fs::write(base.join("file"), b"kept").unwrap();
        copy_link(&base.join("file"), target, &[own]);
        assert_eq!(std::fs::read(base.join("file")).unwrap(), b"kept");
        // Parent missing: made with its parents on an own filesystem, not elsewhere.
        copy_link(&base.join("a/b/link"), target, &[]);
        assert!(!base.join("a").exists());
        copy_link(&base.join("a/b/link"), target, &[own]);
        assert_eq!(std::fs::read_link(base.join("a/b/link")).unwrap(), target);
    }

    #[test]
    fn links_are_copied_only_onto_the_views_own_filesystems() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let own = std::fs::metadata(dir.path()).unwrap().dev();
        let deep = dir.path().join("missing/parent/link");
        assert!(on_own_filesystem(&deep, &[own]));
        assert!(!on_own_filesystem(&deep, &[own.wrapping_add(1)]));
        assert!(!on_own_filesystem(&deep, &[]));
    }

    #[test]
    fn the_stepwise_open_refuses_links_as_openat2_does() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("d")).unwrap();
        std::fs::write(real.join("d/f"), b"x").unwrap();
        std::os::unix::fs::symlink(real.join("d"), real.join("link")).unwrap();
        std::os::unix::fs::symlink(real.join("d/f"), real.join("d/flink")).unwrap();
        for (path, ok) in [
            (real.join("d/f"), true),
            (real.join("d"), true),
            (real.join("link/f"), false),
            (real.join("link"), false),
            (real.join("d/flink"), false),
            (real.join("d/missing"), false),
        ] {
            let kernel = open_no_symlinks(&path)
                .map(|_| ())
                .map_err(|e| e.raw_os_error());
            let stepwise = open_no_symlinks_stepwise(&path)
                .map(|_| ())
                .map_err(|e| e.raw_os_error());
            assert_eq!(kernel.is_ok(), ok, "{}", path.display());
            assert_eq!(kernel, stepwise, "{}", path.display());
        }
    }

    fn bind(path: &str, write: bool, exec: bool) -> MountOp {
        MountOp::Bind {
            path: path.into(),
            write,
            exec,
            device: false,
            optional: true,
        }
    }

    #[test]
    fn nested_read_inside_write_is_dropped_write_inside_read_kept() {
        let mut ops = vec![
            bind("/a/b", false, false),
            bind("/a", true, false),
            bind("/r/w", true, false),
            bind("/r", false, false),
            bind("/r", false, false),
        ];
        normalize(&mut ops);
        assert_eq!(
            ops,
            vec![
                bind("/a", true, false),
                bind("/r", false, false),
                bind("/r/w", true, false)
            ]
        );
    }

    /// The rule of [`normalize`], written as the plain pairwise comparison it replaces.
    fn normalize_pairwise(ops: &mut Vec<MountOp>) {
        let binds: Vec<(PathBuf, bool, bool)> = ops
            .iter()
            .filter_map(|op| match op {
                MountOp::Bind {
                    path,
                    write,
                    exec,
                    device: false,
                    ..
                } => Some((path.clone(), *write, *exec)),
                _ => None,
            })
            .collect();
        let mut seen = std::collections::HashSet::new();
        ops.retain(|op| {
            let MountOp::Bind {
                path, write, exec, ..
            } = op
            else {
                return true;
            };
            seen.insert((path.clone(), *write, *exec))
                && !binds.iter().any(|(p, w, x)| {
                    path.starts_with(p)
                        && (p != path || (*w, *x) != (*write, *exec))
                        && *w >= *write
                        && *x >= *exec
                })
        });
        ops.sort_by_key(|op| (0, op.target().components().count()));
    }

    #[test]
    fn normalize_keeps_what_the_pairwise_rule_keeps() {
        let dirs = [
            "/a", "/a/b", "/a/b/c", "/a/bc", "/d", "/d/e", "/", "/a/b/c/d",
        ];
        // A small deterministic generator: many mixes of nesting, duplicates and rights.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..2000 {
            let len = 1 + next(8) as usize;
            let ops: Vec<MountOp> = (0..len)
                .map(|_| {
                    bind(
                        dirs[next(dirs.len() as u64) as usize],
                        next(2) == 1,
                        next(2) == 1,
                    )
                })
                .collect();
            let (mut fast, mut plain) = (ops.clone(), ops.clone());
            normalize(&mut fast);
            normalize_pairwise(&mut plain);
            assert_eq!(fast, plain, "from {ops:?}");
        }
    }

    /// Both ways of cloning a bind ([`clone_bind`], [`clone_then_set`]) leave the attached
    /// copy with the bind's flags: read-only, noexec and nosuid, then read-write again.
    #[test]
    fn both_ways_of_cloning_a_bind_set_its_flags() {
        let source = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).unwrap();
        let (source_c, target_c, slash) = (c(source.path()), c(target.path()), c(Path::new("/")));
        let (ro, rw) = (
            bind_attrs(false, false, false),
            bind_attrs(true, false, false),
        );
        // SAFETY: the child makes only system calls (no allocation) and leaves with _exit.
        let status = unsafe {
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                let code = (|| {
                    if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                        return 10;
                    }
                    let private = libc::MS_REC | libc::MS_PRIVATE;
                    let null = std::ptr::null();
                    if libc::mount(null, slash.as_ptr(), null, private, null.cast()) != 0 {
                        return 11;
                    }
                    let fd = libc::open(source_c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                    if fd < 0 {
                        return 12;
                    }
                    use std::os::fd::FromRawFd;
                    let source = std::fs::File::from_raw_fd(fd);
                    let ways: [CloneWay; 2] = [clone_bind, clone_then_set];
                    for (i, way) in ways.into_iter().enumerate() {
                        for (j, (set, clear)) in [ro, rw].into_iter().enumerate() {
                            let Ok(tree) = way(&source, set, clear) else {
                                return 20 + i as i32;
                            };
                            if attach_at(&tree, &target_c).is_err() {
                                return 30 + i as i32;
                            }
                            let mut st: libc::statvfs = std::mem::zeroed();
                            libc::statvfs(target_c.as_ptr(), &mut st);
                            let flags = st.f_flag;
                            let want_ro = j == 0;
                            let ok = (flags & libc::ST_RDONLY != 0) == want_ro
                                && flags & libc::ST_NOEXEC != 0
                                && flags & libc::ST_NOSUID != 0
                                && flags & libc::ST_NODEV != 0;
                            if !ok {
                                return 40 + 2 * i as i32 + j as i32;
                            }
                            libc::umount2(target_c.as_ptr(), libc::MNT_DETACH);
                        }
                    }
                    0
                })();
                libc::_exit(code);
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            status
        };
        let code = libc::WEXITSTATUS(status);
        if code == 10 {
            crate::test_kernel::missing("no user namespaces here");
            return;
        }
        assert_eq!(code, 0, "child failed at step {code}");
    }

    /// A way to clone a bind with its flags.
    type CloneWay = fn(&std::fs::File, u64, u64) -> std::io::Result<std::fs::File>;

    /// [`attach_tree`] onto a C path, without allocating.
    fn attach_at(tree: &std::fs::File, target: &CString) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
        let empty = CString::default();
        // SAFETY: move_mount of our detached tree onto a valid path.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_move_mount,
                tree.as_raw_fd(),
                empty.as_ptr(),
                libc::AT_FDCWD,
                target.as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    #[test]
    fn exec_binds_inside_noexec_trees_are_kept() {
        let mut ops = vec![bind("/usr", false, false), bind("/usr/lib", false, true)];
        normalize(&mut ops);
        assert_eq!(ops.len(), 2);
    }
}
