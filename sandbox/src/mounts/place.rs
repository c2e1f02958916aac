//! Placing a file of the sandbox's own (the egress resolver files) at a path of the view
//! without changing anything of the host.
//!
//! The path is followed as the tool will follow it: one component at a time from the view's
//! root, symlinks resolved inside the view (an absolute link starts again at the view's root,
//! `..` never climbs above it), never through the host's own tree. When the entry it leads to
//! exists, the file is bound over it: a mount changes only this mount namespace, whatever the
//! entry is (a host file under a read-only or writable bind). When it does not exist, it is
//! created only in a directory of a filesystem the view mounted itself (its root tmpfs, `/dev`
//! or the private scratch); in a directory of a host bind the run is refused, since creating
//! it there would create it on the host. Nothing is ever removed.

use std::collections::VecDeque;
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// The most symlinks followed for one path, as the kernel's own limit.
const MAX_LINKS: usize = 40;

/// Why a file of the sandbox's own could not be placed in the view; the run is refused.
#[derive(Debug, thiserror::Error)]
pub enum PlaceError {
    /// The file is missing and the directory it belongs in is a host directory bound into the
    /// view: creating it would create it on the host.
    #[error("{}", on_host(file, at, dir, root))]
    OnHost {
        /// The file, as the tool names it.
        file: PathBuf,
        /// Where it leads in the view (through symlinks).
        at: PathBuf,
        /// The existing directory it would be created in.
        dir: PathBuf,
        /// The bind that shows the host's directory there.
        root: PathBuf,
    },
    /// The path leads to a directory, which a file cannot be bound over.
    #[error("{} leads to the directory {} in the view: a file cannot be placed over it", file.display(), at.display())]
    Directory {
        /// The file, as the tool names it.
        file: PathBuf,
        /// The directory it leads to.
        at: PathBuf,
    },
    /// More than `MAX_LINKS` symlinks on the way.
    #[error("{}: more than {MAX_LINKS} symlinks on the way in the view", file.display())]
    Loop {
        /// The file, as the tool names it.
        file: PathBuf,
    },
    /// A system call failed.
    #[error("{}: {what} {}: {source}", file.display(), at.display())]
    Io {
        /// The file, as the tool names it.
        file: PathBuf,
        /// What was done.
        what: &'static str,
        /// Where, in the view.
        at: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The message of [`PlaceError::OnHost`].
fn on_host(file: &Path, at: &Path, dir: &Path, root: &Path) -> String {
    let missing = if file == at {
        format!("{} does not exist in the view", file.display())
    } else {
        format!(
            "{} leads to {}, which does not exist in the view",
            file.display(),
            at.display()
        )
    };
    format!(
        "{missing}, and its directory {} is the host's, under the root {} bound from the host: \
         creating it would create it on the host (create {} on the host, or declare a root that \
         does not cover {})",
        dir.display(),
        root.display(),
        at.display(),
        dir.display()
    )
}

/// Where a path leads in the view.
enum Found {
    /// An existing entry: its `O_PATH` descriptor and its path in the view.
    Entry(File, PathBuf),
    /// Missing: the deepest existing directory on the way, its path in the view, and the names
    /// still to follow below it (the first one is missing).
    Missing(File, PathBuf, Vec<OsString>),
}

fn c_name(name: &OsStr) -> std::io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

/// The entry `name` of `dir` itself, never what a link names (see [`super::open_entry_at`]).
fn open_entry(dir: &File, name: &OsStr, extra: libc::c_int) -> std::io::Result<File> {
    super::open_entry_at(dir.as_raw_fd(), &c_name(name)?, extra)
}

/// The target of the symlink `link` (an `O_PATH` descriptor of it).
fn read_link(link: &File) -> std::io::Result<PathBuf> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: an empty path with a descriptor reads the link itself; buf is writable.
    let n = unsafe {
        libc::readlinkat(
            link.as_raw_fd(),
            c"".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(PathBuf::from(OsString::from_vec(buf)))
}

/// The names of `path` in order (`.` and `..` kept, the root dropped).
fn names(path: &Path) -> impl DoubleEndedIterator<Item = OsString> + '_ {
    path.components().filter_map(|c| match c {
        Component::Normal(n) => Some(n.to_os_string()),
        Component::CurDir => Some(".".into()),
        Component::ParentDir => Some("..".into()),
        Component::RootDir | Component::Prefix(_) => None,
    })
}

/// Follows `path` from the view's `root` as the tool would: one component at a time, each
/// opened without following it, a symlink's target followed inside the view (an absolute one
/// from `root` again), `..` never above `root`.
fn follow(root: &File, file: &Path) -> Result<Found, PlaceError> {
    let io = io_error(file);
    let top = root
        .try_clone()
        .map_err(|e| io("open", Path::new("/"), e))?;
    // The directories walked through, each with its path in the view; the first is the root.
    let mut dirs: Vec<(File, PathBuf)> = vec![(top, PathBuf::from("/"))];
    let mut todo: VecDeque<OsString> = names(file).collect();
    let mut links = 0;
    while let Some(name) = todo.pop_front() {
        if name == "." {
            continue;
        }
        if name == ".." {
            if dirs.len() > 1 {
                dirs.pop();
            }
            continue;
        }
        let (dir, dir_path) = dirs.last().expect("the root is never popped");
        let at = dir_path.join(&name);
        let entry = match open_entry(dir, &name, 0) {
            Ok(entry) => entry,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                let dir = dir.try_clone().map_err(|e| io("open", dir_path, e))?;
                let rest = std::iter::once(name).chain(todo).collect();
                return Ok(Found::Missing(dir, dir_path.clone(), rest));
            }
            Err(e) => return Err(io("open", &at, e)),
        };
        let meta = entry.metadata().map_err(|e| io("stat", &at, e))?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(PlaceError::Loop {
                    file: file.to_path_buf(),
                });
            }
            let target = read_link(&entry).map_err(|e| io("read the link", &at, e))?;
            if target.is_absolute() {
                dirs.truncate(1);
            }
            for n in names(&target).rev() {
                todo.push_front(n);
            }
        } else if meta.is_dir() {
            dirs.push((entry, at));
        } else if todo.is_empty() {
            return Ok(Found::Entry(entry, at));
        } else {
            return Err(io(
                "follow",
                &at,
                std::io::Error::from_raw_os_error(libc::ENOTDIR),
            ));
        }
    }
    let (dir, at) = dirs.pop().expect("the root is never popped");
    Ok(Found::Entry(dir, at))
}

/// The error of step `what` at `at` while placing `file`.
fn io_error(file: &Path) -> impl Fn(&'static str, &Path, std::io::Error) -> PlaceError + '_ {
    move |what, at, source| PlaceError::Io {
        file: file.to_path_buf(),
        what,
        at: at.to_path_buf(),
        source,
    }
}

/// Creates the missing `rest` (directories, then an empty file) below `dir`, which is on a
/// filesystem of the view's own. Returns the new file and its path in the view.
fn create(
    file: &Path,
    mut dir: File,
    mut at: PathBuf,
    rest: &[OsString],
) -> Result<(File, PathBuf), PlaceError> {
    let io = io_error(file);
    let last = rest.len() - 1;
    for (i, name) in rest.iter().enumerate() {
        at.push(name);
        // Below a missing entry, a link's `.` or `..` would name what does not exist yet.
        if name == "." || name == ".." {
            return Err(io(
                "create",
                &at,
                std::io::Error::from_raw_os_error(libc::ENOENT),
            ));
        }
        let c = c_name(name).map_err(|e| io("create", &at, e))?;
        // SAFETY: a valid directory descriptor and C string.
        let rc = unsafe {
            if i == last {
                libc::mknodat(dir.as_raw_fd(), c.as_ptr(), libc::S_IFREG | 0o644, 0)
            } else {
                libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o755)
            }
        };
        if rc != 0 {
            return Err(io("create", &at, std::io::Error::last_os_error()));
        }
        let extra = if i == last { 0 } else { libc::O_DIRECTORY };
        dir = open_entry(&dir, name, extra).map_err(|e| io("open", &at, e))?;
    }
    Ok((dir, at))
}

/// Places the read-only file `staged` at `file` in the view whose root is `root`: bound over
/// the entry `file` leads to, or over a new empty file where that entry is missing and its
/// directory is on a filesystem whose device is one of `own_devices` (the view's own tmpfs
/// mounts). `binds` are the host paths bound into the view, to name the one that covers a
/// directory where nothing may be created. Returns the mount (its root is the placed file,
/// for the Landlock rule) and where it was placed in the view.
pub(super) fn place_file(
    root: &File,
    own_devices: &[u64],
    binds: &[PathBuf],
    file: &Path,
    staged: &File,
) -> Result<(File, PathBuf), PlaceError> {
    let io = io_error(file);
    let (target, at) = match follow(root, file)? {
        Found::Entry(entry, at) => {
            let is_dir = entry.metadata().map_err(|e| io("stat", &at, e))?.is_dir();
            if is_dir {
                return Err(PlaceError::Directory {
                    file: file.to_path_buf(),
                    at,
                });
            }
            (entry, at)
        }
        Found::Missing(dir, dir_path, rest) => {
            let device = dir.metadata().map_err(|e| io("stat", &dir_path, e))?.dev();
            if !own_devices.contains(&device) {
                let root = binds
                    .iter()
                    .filter(|b| dir_path.starts_with(b))
                    .max_by_key(|b| b.components().count())
                    .unwrap_or(&dir_path)
                    .clone();
                let at = rest.iter().fold(dir_path.clone(), |p, n| p.join(n));
                return Err(PlaceError::OnHost {
                    file: file.to_path_buf(),
                    at,
                    dir: dir_path,
                    root,
                });
            }
            create(file, dir, dir_path, &rest)?
        }
    };
    let (set, clear) = (
        super::MOUNT_ATTR_RDONLY
            | super::MOUNT_ATTR_NOSUID
            | super::MOUNT_ATTR_NODEV
            | super::MOUNT_ATTR_NOEXEC,
        0,
    );
    let tree = super::clone_bind(staged, set, clear).map_err(|e| io("copy", &at, e))?;
    super::attach_onto(&tree, &target).map_err(|e| io("mount over", &at, e))?;
    Ok((tree, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(root: &Path, file: &str) -> Result<(PathBuf, Option<Vec<OsString>>), String> {
        let dir = File::open(root).unwrap();
        match follow(&dir, Path::new(file)) {
            Ok(Found::Entry(_, at)) => Ok((at, None)),
            Ok(Found::Missing(_, at, rest)) => Ok((at, Some(rest))),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Links are followed inside the root, as `RESOLVE_IN_ROOT` would: an absolute target
    /// starts again at the root and `..` stops there, so no path leads out of the view.
    #[test]
    fn links_are_followed_inside_the_root_only() {
        let outside = tempfile::tempdir().unwrap();
        let view = outside.path().join("view");
        std::fs::create_dir_all(view.join("etc")).unwrap();
        std::fs::create_dir_all(view.join("run/resolve")).unwrap();
        std::fs::write(view.join("run/resolve/stub"), b"x").unwrap();
        std::fs::write(outside.path().join("secret"), b"s").unwrap();
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(target, view.join("etc").join(name)).unwrap()
        };
        link("/run/resolve/stub", "absolute");
        link("../run/resolve/stub", "relative");
        link("../../../../secret", "climbing");
        link(
            outside.path().join("secret").to_str().unwrap(),
            "host_absolute",
        );
        link("/run/missing/dir/file", "dangling");
        link("loop_b", "loop_a");
        link("loop_a", "loop_b");
        let stub = (PathBuf::from("/run/resolve/stub"), None);
        assert_eq!(found(&view, "/etc/absolute"), Ok(stub.clone()));
        assert_eq!(found(&view, "/etc/relative"), Ok(stub.clone()));
        assert_eq!(found(&view, "/etc/../etc/./absolute"), Ok(stub));
        // `..` stops at the root: /secret of the view, which is missing, not the host's.
        let missing = |rest: &[&str]| Some(rest.iter().map(OsString::from).collect());
        assert_eq!(
            found(&view, "/etc/climbing"),
            Ok((PathBuf::from("/"), missing(&["secret"])))
        );
        // An absolute target is followed from the view's root: the host's file is not found.
        let host_names: Vec<OsString> = names(&outside.path().join("secret")).collect();
        assert_eq!(
            found(&view, "/etc/host_absolute"),
            Ok((PathBuf::from("/"), Some(host_names)))
        );
        assert_eq!(
            found(&view, "/etc/dangling"),
            Ok((PathBuf::from("/run"), missing(&["missing", "dir", "file"])))
        );
        assert_eq!(found(&view, "/etc"), Ok((PathBuf::from("/etc"), None)));
        let looped = found(&view, "/etc/loop_a").unwrap_err();
        assert!(looped.contains("more than 40 symlinks"), "{looped}");
    }

    /// What is missing is made below the directory the walk stopped in, and nowhere else.
    #[test]
    fn create_makes_the_missing_directories_and_file() {
        let view = tempfile::tempdir().unwrap();
        std::fs::create_dir(view.path().join("run")).unwrap();
        let root = File::open(view.path()).unwrap();
        let Found::Missing(dir, at, rest) = follow(&root, Path::new("/run/a/b/file")).unwrap()
        else {
            panic!("the file is missing");
        };
        let (made, at) = create(Path::new("/run/a/b/file"), dir, at, &rest).unwrap();
        assert_eq!(at, PathBuf::from("/run/a/b/file"));
        assert!(made.metadata().unwrap().is_file());
        assert!(view.path().join("run/a/b/file").is_file());
    }

    /// Refusals come before anything is created or mounted: a missing file in a directory of
    /// no filesystem of the view's own names the bind that covers it, and a path that leads to
    /// a directory is refused.
    #[test]
    fn refusals_name_the_file_and_the_root() {
        let view = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(view.path().join("etc/resolv.conf")).unwrap();
        std::os::unix::fs::symlink("/srv/state/stub", view.path().join("etc/link")).unwrap();
        std::fs::create_dir_all(view.path().join("srv/state")).unwrap();
        let root = File::open(view.path()).unwrap();
        let staged = File::open(view.path()).unwrap();
        let binds = [PathBuf::from("/etc"), PathBuf::from("/srv")];
        // No device is the view's own here: every directory counts as the host's.
        let place = |file: &str| place_file(&root, &[], &binds, Path::new(file), &staged);
        match place("/etc/nsswitch.conf") {
            Err(PlaceError::OnHost { dir, root, .. }) => {
                assert_eq!((dir, root), ("/etc".into(), "/etc".into()))
            }
            other => panic!("{other:?}"),
        }
        match place("/etc/link") {
            Err(e @ PlaceError::OnHost { .. }) => {
                let why = e.to_string();
                assert!(
                    why.contains("/etc/link leads to /srv/state/stub")
                        && why.contains("under the root /srv bound"),
                    "{why}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            place("/etc/resolv.conf"),
            Err(PlaceError::Directory { .. })
        ));
        assert!(!view.path().join("etc/nsswitch.conf").exists());
        assert!(!view.path().join("srv/state/stub").exists());
    }
}
