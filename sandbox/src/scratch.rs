//! The hardened profile's private scratch directories: made (0700, in the temporary directory),
//! checked to still be where they were made, and emptied between runs, always through a
//! descriptor held since the directory was made, never by following a name the tool could have
//! replaced ([`crate::slots`] keeps them).
//!
//! A process that is killed cannot remove its directories. Each one is therefore locked
//! (`flock`) through the descriptor its process holds, for as long as that process, or a
//! forked child that inherited the descriptor, lives. The first directory a process makes in
//! a temporary directory sweeps it once ([`sweep_stale`]): a scratch directory of the same
//! owner whose lock can be taken belongs to no living process, and is emptied and removed the
//! same way, through a descriptor, nothing followed. A lock is the proof, not a pid, which
//! another pid namespace sharing the directory could reuse.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// How deep [`Scratch::empty`] goes: a deeper tree makes emptying fail (and the directory is
/// then never reused).
const MAX_DEPTH: u32 = 128;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The first part of every scratch directory's name (then the pid and a counter).
const PREFIX: &str = "toolpolicy-scratch-";

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// A scratch directory and a descriptor of it, held since it was made.
#[derive(Debug)]
pub(crate) struct Scratch {
    /// Its canonical path.
    pub path: PathBuf,
    c_path: CString,
    fd: OwnedFd,
    dev: u64,
    ino: u64,
    /// The (device, inode) of the directory it was made in.
    base: (u64, u64),
    /// What it carried besides its entries and mode when it was made.
    marks: Marks,
}

/// What a run can change on its scratch directory besides its entries and its mode, which
/// [`Scratch::empty`] resets: its extended attributes (`user.*` data, ACLs; names and values)
/// and its inode flags (`chattr`). A directory carries none of a run when it has what it had
/// when it was made ([`Scratch::as_made`]). Its timestamps are left out: emptying it changes
/// them anyway, and setting them back would be a journaled write per run.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Marks {
    /// Each name (with its NUL) and its value's length and bytes; `None` when they could not
    /// be read, which never matches.
    xattrs: Option<Vec<u8>>,
    /// `FS_IOC_GETFLAGS` without [`LAYOUT_FLAGS`]; `None` on a file system without inode
    /// flags.
    flags: Option<libc::c_int>,
}

/// Inode flags the file system sets by itself as a directory grows, and keeps after it is
/// emptied: a run that made many entries (ext4 indexes a directory beyond one block) has
/// left nothing a later run could read or be changed by. `FS_INDEX_FL`, `FS_EXTENT_FL`,
/// `FS_HUGE_FILE_FL`, `FS_INLINE_DATA_FL`.
const LAYOUT_FLAGS: libc::c_int = 0x0000_1000 | 0x0008_0000 | 0x0004_0000 | 0x1000_0000;

impl Marks {
    pub(crate) fn of(dir: BorrowedFd<'_>) -> Marks {
        let mut flags: libc::c_int = 0;
        // SAFETY: FS_IOC_GETFLAGS writes one int through the pointer.
        let got = unsafe { libc::ioctl(dir.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) };
        Marks {
            xattrs: xattrs(dir),
            flags: (got == 0).then_some(flags & !LAYOUT_FLAGS),
        }
    }

    /// Whether a directory that carries `self` carries what it carried when it was made.
    pub(crate) fn matches(&self, made: &Marks) -> bool {
        self.xattrs.is_some() && self == made
    }
}

/// Reads a size-then-fill `*xattr` call into a buffer, growing it while the text grows between
/// the two calls (`ERANGE`); `Ok(empty)` where the file system has no extended attributes.
fn read_sized(call: &dyn Fn(*mut libc::c_void, usize) -> isize) -> std::io::Result<Vec<u8>> {
    loop {
        let size = call(std::ptr::null_mut(), 0);
        if size < 0 {
            let e = errno();
            return match e.raw_os_error() {
                Some(libc::ENOTSUP) => Ok(Vec::new()),
                _ => Err(e),
            };
        }
        if size == 0 {
            return Ok(Vec::new());
        }
        let mut bytes = vec![0u8; size as usize];
        let n = call(bytes.as_mut_ptr().cast(), bytes.len());
        if n >= 0 {
            bytes.truncate(n as usize);
            return Ok(bytes);
        }
        if errno().raw_os_error() != Some(libc::ERANGE) {
            return Err(errno());
        }
    }
}

/// Every extended attribute of `dir` that the caller may read: each name with its NUL, then
/// its value's length (8 bytes) and bytes. One `flistxattr` where it has none.
fn xattrs(dir: BorrowedFd<'_>) -> Option<Vec<u8>> {
    let fd = dir.as_raw_fd();
    // SAFETY: flistxattr and fgetxattr write at most `len` bytes to `buf`, or nothing when it
    // is null with a length of 0.
    let names = read_sized(&|buf, len| unsafe { libc::flistxattr(fd, buf.cast(), len) }).ok()?;
    let mut all = names.clone();
    for name in names.split_inclusive(|b| *b == 0) {
        let name = CStr::from_bytes_with_nul(name).ok()?;
        let value =
            read_sized(&|buf, len| unsafe { libc::fgetxattr(fd, name.as_ptr(), buf, len) }).ok()?;
        all.extend((value.len() as u64).to_le_bytes());
        all.extend(value);
    }
    Some(all)
}

/// The (device, inode) of the temporary directory the environment names now (`$TMPDIR`, else
/// `/tmp`, links followed): where [`Scratch::create`] would make a directory. `None` when it
/// is not a directory.
pub(crate) fn temp_dir_now() -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(std::env::temp_dir())
        .ok()
        .filter(std::fs::Metadata::is_dir)
        .map(|m| (m.dev(), m.ino()))
}

/// The (device, inode) of an open descriptor.
fn identity(fd: BorrowedFd<'_>) -> std::io::Result<(u64, u64)> {
    // SAFETY: an all-zero stat is valid; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a live descriptor and buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(errno());
    }
    Ok((st.st_dev, st.st_ino))
}

/// `openat` that owns its result.
fn open_at(dir: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> std::io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated name relative to a live descriptor.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: a new descriptor, owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Scratch {
    /// A new private directory under the temporary directory. A name can be taken by a run of
    /// an earlier process with the same pid that did not clean up (it was killed): take the
    /// next.
    pub(crate) fn create() -> Result<Scratch, String> {
        let base = std::env::temp_dir();
        let base = std::fs::canonicalize(&base).unwrap_or(base);
        sweep_once(&base);
        let mut last = None;
        for _ in 0..100 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("{PREFIX}{}-{n}", std::process::id()));
            let c_path = CString::new(path.as_os_str().as_bytes())
                .map_err(|_| format!("the temporary directory {} has a NUL", base.display()))?;
            // SAFETY: a NUL-terminated path.
            if unsafe { libc::mkdir(c_path.as_ptr(), 0o700) } != 0 {
                let e = errno();
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    last = Some(path);
                    continue;
                }
                return Err(format!("creating scratch dir {}: {e}", path.display()));
            }
            let made = (|| {
                // SAFETY: AT_FDCWD stands for the current directory; the path is absolute.
                let cwd = unsafe { BorrowedFd::borrow_raw(libc::AT_FDCWD) };
                let fd = open_at(
                    cwd,
                    &c_path,
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
                )?;
                // Locked before anything is put in it, and for as long as it is ours.
                // SAFETY: flock on our own descriptor.
                if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                    return Err(errno());
                }
                let (dev, ino) = identity(fd.as_fd())?;
                // Where it was made, whatever the base's path names by now.
                let base = identity(open_at(fd.as_fd(), c"..", libc::O_PATH)?.as_fd())?;
                Ok::<_, std::io::Error>((fd, dev, ino, base))
            })();
            return match made {
                Ok((fd, dev, ino, base)) => {
                    let marks = Marks::of(fd.as_fd());
                    let scratch = Scratch {
                        path,
                        c_path,
                        fd,
                        dev,
                        ino,
                        base,
                        marks,
                    };
                    // Another process's sweep can take it between the mkdir and the lock, as
                    // a stale one: then its path names nothing (or something else) by now.
                    if !scratch.in_place() {
                        last = Some(scratch.path);
                        continue;
                    }
                    Ok(scratch)
                }
                // Swept meanwhile (gone, or locked by the sweep that is removing it).
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EWOULDBLOCK)) => {
                    last = Some(path);
                    continue;
                }
                Err(e) => {
                    // SAFETY: removing the empty directory just made.
                    unsafe { libc::rmdir(c_path.as_ptr()) };
                    Err(format!("opening scratch dir {}: {e}", path.display()))
                }
            };
        }
        Err(format!(
            "creating a scratch dir: 100 names up to {} are taken",
            last.map_or_else(String::new, |d| d.display().to_string())
        ))
    }

    /// Whether it was made in the temporary directory `base` ([`temp_dir_now`]).
    pub(crate) fn made_in(&self, base: Option<(u64, u64)>) -> bool {
        base == Some(self.base)
    }

    /// Whether its path still names the directory it was made as (not a link, not another
    /// directory renamed into its place).
    pub(crate) fn in_place(&self) -> bool {
        self.mode_in_place().is_some()
    }

    /// Its permission bits, read with [`Scratch::in_place`]'s check; `None` where that check
    /// fails.
    pub(crate) fn mode_in_place(&self) -> Option<u32> {
        let st = crate::fingerprint::lstat(&self.c_path).ok()?;
        (st.st_mode & libc::S_IFMT == libc::S_IFDIR
            && (st.st_dev, st.st_ino) == (self.dev, self.ino))
            .then_some(st.st_mode & 0o7777)
    }

    /// Whether it carries no extended attribute or inode flag that it did not have when it was
    /// made ([`Marks`]): otherwise a run could leave data in it (`setfattr`), a default ACL for
    /// the next run's files, or a flag, which emptying it would not remove. One `flistxattr`
    /// and one `ioctl` where it has no attributes.
    pub(crate) fn as_made(&self) -> bool {
        Marks::of(self.fd.as_fd()).matches(&self.marks)
    }

    /// Removes everything in it, through its descriptor, and gives it back its mode 0700
    /// unless `mode` (what [`Scratch::mode_in_place`] just read; `None`: unknown) says it has
    /// it: a `chmod` changes the inode's ctime, which the file system journals and the slot's
    /// fingerprint watch reports, and a run seldom changes the mode. Nothing is followed: links
    /// are removed as links, directories are opened with `O_NOFOLLOW` relative to their
    /// parent's descriptor, and unreadable ones (mode 000) are made readable through their own
    /// descriptor first.
    pub(crate) fn empty(&self, mode: Option<u32>) -> std::io::Result<()> {
        // SAFETY: fchmod on our own descriptor.
        if mode != Some(0o700) && unsafe { libc::fchmod(self.fd.as_raw_fd(), 0o700) } != 0 {
            return Err(errno());
        }
        empty_dir(self.fd.as_fd(), MAX_DEPTH)
    }

    /// Empties and removes it when its path still names it; otherwise leaves whatever is at
    /// the path alone.
    pub(crate) fn remove(self) {
        let mode = self.mode_in_place();
        if mode.is_some() && self.empty(mode).is_ok() {
            // SAFETY: a NUL-terminated path; it names our directory (checked just above).
            unsafe { libc::rmdir(self.c_path.as_ptr()) };
        }
    }
}

/// Sweeps `base` with [`sweep_stale`] the first time this process makes a directory in it.
fn sweep_once(base: &std::path::Path) {
    static SWEPT: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::new(Vec::new());
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(base) else {
        return;
    };
    let id = (meta.dev(), meta.ino());
    {
        let mut swept = SWEPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if swept.contains(&id) {
            return;
        }
        swept.push(id);
    }
    sweep_stale(base);
}

/// Empties and removes every scratch directory in `base` that no living process holds: a
/// directory named as ours, owned by our effective user, not a link, whose lock can be taken.
/// Returns how many were removed. Whatever cannot be opened, locked, emptied or removed is
/// left as it is.
pub(crate) fn sweep_stale(base: &std::path::Path) -> usize {
    let Ok(c_base) = CString::new(base.as_os_str().as_bytes()) else {
        return 0;
    };
    // SAFETY: AT_FDCWD stands for the current directory; the path is NUL-terminated.
    let cwd = unsafe { BorrowedFd::borrow_raw(libc::AT_FDCWD) };
    let Ok(dir) = open_at(cwd, &c_base, libc::O_RDONLY | libc::O_DIRECTORY) else {
        return 0;
    };
    let Ok(listing) = open_at(dir.as_fd(), c".", libc::O_RDONLY | libc::O_DIRECTORY) else {
        return 0;
    };
    let mut names = Vec::new();
    let _ = visit(listing, |name, _, kind| {
        if name.to_bytes().starts_with(PREFIX.as_bytes())
            && (kind == libc::DT_DIR || kind == libc::DT_UNKNOWN)
        {
            names.push(name.to_owned());
        }
        true
    });
    names
        .iter()
        .filter(|name| remove_if_stale(dir.as_fd(), name))
        .count()
}

/// [`sweep_stale`] for one entry of the directory open as `base`.
fn remove_if_stale(base: BorrowedFd<'_>, name: &CStr) -> bool {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    let Ok(fd) = open_at(base, name, flags) else {
        return false;
    };
    // SAFETY: an all-zero stat is valid; fstat fills it from a live descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above; geteuid has no arguments.
    let ours = unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0
        && st.st_uid == unsafe { libc::geteuid() };
    // SAFETY: flock on our own descriptor; the lock goes with it.
    if !ours || unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return false;
    }
    // SAFETY: fchmod on our own descriptor (emptying needs to write it).
    if unsafe { libc::fchmod(fd.as_raw_fd(), 0o700) } != 0
        || empty_dir(fd.as_fd(), MAX_DEPTH).is_err()
    {
        return false;
    }
    // Removed by name only while the name still leads to the directory emptied.
    let mut now: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated name relative to a live descriptor, into a live buffer.
    let same = unsafe {
        libc::fstatat(
            base.as_raw_fd(),
            name.as_ptr(),
            &mut now,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    } == 0
        && (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino);
    // SAFETY: as above.
    same && unsafe { libc::unlinkat(base.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) } == 0
}

/// Removes every entry of the directory open as `dir`.
fn empty_dir(dir: BorrowedFd<'_>, depth: u32) -> std::io::Result<()> {
    empty_dir_but(dir, depth, &|_| false)
}

/// Removes every entry of the directory open as `dir` whose name `keep` does not hold, and
/// everything below those, as [`Scratch::empty`] does (links removed as links, directories
/// opened with `O_NOFOLLOW` and made readable first), at most [`MAX_DEPTH`] levels down.
pub(crate) fn empty_dir_keeping(
    dir: BorrowedFd<'_>,
    keep: &dyn Fn(&CStr) -> bool,
) -> std::io::Result<()> {
    empty_dir_but(dir, MAX_DEPTH, keep)
}

fn empty_dir_but(
    dir: BorrowedFd<'_>,
    depth: u32,
    keep: &dyn Fn(&CStr) -> bool,
) -> std::io::Result<()> {
    // A new open file description, so listing starts at the beginning whatever was read before.
    let listing = open_at(dir, c".", libc::O_RDONLY | libc::O_DIRECTORY)?;
    let names = list(listing)?;
    for (name, _, _) in names.into_iter().filter(|(name, _, _)| !keep(name)) {
        // SAFETY: a NUL-terminated name relative to a live descriptor.
        if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } == 0 {
            continue;
        }
        let e = errno();
        if e.raw_os_error() != Some(libc::EISDIR) {
            return Err(e);
        }
        if depth == 0 {
            return Err(std::io::Error::other("scratch tree too deep"));
        }
        let sub = open_subdir(dir, &name)?;
        empty_dir(sub.as_fd(), depth - 1)?;
        drop(sub);
        // SAFETY: as above.
        if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) } != 0 {
            return Err(errno());
        }
    }
    Ok(())
}

/// Opens the subdirectory `name` of `dir` without following a link, and makes it readable,
/// writable and searchable by its owner (the tool may have set mode 000).
fn open_subdir(dir: BorrowedFd<'_>, name: &CStr) -> std::io::Result<OwnedFd> {
    let flags = libc::O_DIRECTORY | libc::O_NOFOLLOW;
    let fd = match open_at(dir, name, libc::O_RDONLY | flags) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
            // Searching the parent is enough for an O_PATH descriptor; the mode is changed
            // through it (the inode it names), never through the name.
            let path_fd = open_at(dir, name, libc::O_PATH | flags)?;
            let proc = CString::new(format!("/proc/self/fd/{}", path_fd.as_raw_fd()))
                .map_err(std::io::Error::other)?;
            // SAFETY: chmod of the magic link of our own descriptor: the inode itself.
            if unsafe { libc::chmod(proc.as_ptr(), 0o700) } != 0 {
                return Err(errno());
            }
            open_at(path_fd.as_fd(), c".", libc::O_RDONLY | libc::O_DIRECTORY)?
        }
        Err(e) => return Err(e),
    };
    // SAFETY: fchmod on our own descriptor.
    if unsafe { libc::fchmod(fd.as_raw_fd(), 0o700) } != 0 {
        return Err(errno());
    }
    Ok(fd)
}

/// One directory entry: its name, inode number and type (`DT_*`, `DT_UNKNOWN` where the file
/// system does not say).
pub(crate) type Entry = (CString, u64, u8);

/// The entries of a directory, `.` and `..` left out.
pub(crate) fn list(dir: OwnedFd) -> std::io::Result<Vec<Entry>> {
    let mut names = Vec::new();
    visit(dir, |name, ino, kind| {
        names.push((name.to_owned(), ino, kind));
        true
    })?;
    Ok(names)
}

/// Calls `each` with every entry of a directory (name, inode number, type), `.` and `..` left
/// out, without copying them, until it returns `false`. `Ok(false)`: stopped early.
pub(crate) fn visit(
    dir: OwnedFd,
    mut each: impl FnMut(&CStr, u64, u8) -> bool,
) -> std::io::Result<bool> {
    // SAFETY: fdopendir takes ownership of the descriptor; closedir below closes it.
    let stream = unsafe { libc::fdopendir(dir.as_raw_fd()) };
    if stream.is_null() {
        return Err(errno());
    }
    std::mem::forget(dir);
    let result = loop {
        // SAFETY: errno cleared to tell the end from an error.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: a live stream.
        let entry = unsafe { libc::readdir64(stream) };
        if entry.is_null() {
            let e = errno();
            break if e.raw_os_error().unwrap_or(0) == 0 {
                Ok(true)
            } else {
                Err(e)
            };
        }
        // SAFETY: d_name is NUL-terminated within the live entry.
        let (name, ino, kind) = unsafe {
            (
                CStr::from_ptr((*entry).d_name.as_ptr()),
                (*entry).d_ino,
                (*entry).d_type,
            )
        };
        if name != c"." && name != c".." && !each(name, ino, kind) {
            break Ok(false);
        }
    };
    // SAFETY: closing the stream we opened.
    unsafe { libc::closedir(stream) };
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn empties_links_as_links_and_unreadable_trees() {
        let victim = tempfile::tempdir().unwrap();
        std::fs::write(victim.path().join("keep"), b"x").unwrap();
        let s = Scratch::create().unwrap();
        let p = &s.path;
        std::fs::create_dir_all(p.join("a/b/c")).unwrap();
        std::fs::write(p.join("a/b/c/f"), b"1").unwrap();
        std::os::unix::fs::symlink(victim.path(), p.join("a/link")).unwrap();
        std::fs::create_dir(p.join("locked")).unwrap();
        std::fs::write(p.join("locked/f"), b"2").unwrap();
        std::fs::set_permissions(p.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o500)).unwrap();
        s.empty(s.mode_in_place()).unwrap();
        assert_eq!(std::fs::read_dir(p).unwrap().count(), 0);
        assert!(victim.path().join("keep").exists());
        assert!(s.in_place());
        let path = p.clone();
        s.remove();
        assert!(!path.exists());
    }

    #[test]
    fn a_directory_renamed_away_is_not_in_place_and_not_removed_by_name() {
        let s = Scratch::create().unwrap();
        let moved = s.path.with_extension("moved");
        std::fs::rename(&s.path, &moved).unwrap();
        std::fs::create_dir(&s.path).unwrap();
        std::fs::write(s.path.join("other"), b"o").unwrap();
        assert!(!s.in_place());
        let path = s.path.clone();
        s.remove();
        assert!(
            path.join("other").exists(),
            "what replaced it is left alone"
        );
        std::fs::remove_dir_all(&path).unwrap();
        std::fs::remove_dir_all(&moved).unwrap();
    }
}
