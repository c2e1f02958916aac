//! Files beneath a grant: what the methods of [`ReadPath`](crate::ReadPath) and
//! [`WritePath`](crate::WritePath) open, and why they cannot open anything else.
//!
//! The gate judges a path's *name*. A name under `/srv/data/**` can still lead elsewhere on disk:
//! `/srv/data/link/key.txt` with `data/link -> ../secret` is the file `/srv/secret/key.txt`.
//! So every path the gate admits is bound to a [`Grant`]: the literal directory of the glob that
//! admitted it (its *root*; `/srv/data` for `/srv/data/**` and for `/srv/data/*.csv`). The
//! methods resolve the rest of the path beneath that root, relative to a directory descriptor of
//! the root, in one system call per open (after the faster way below, on Linux):
//!
//! * On Linux, `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: the kernel refuses any
//!   step (`..`, a relative or absolute symlink, a `/proc` magic link) that would leave the root,
//!   at the moment it opens the file. There is no window between a check and the open: there is
//!   no separate check. When the kernel lacks `openat2` (before 5.6, `ENOSYS`), that is noticed
//!   once and remembered.
//! * Elsewhere, and on such kernels, cap-std resolves the path one component at a time beneath
//!   the root descriptor, with the same refusals.
//!
//! The root is the glob's literal directory, so it can be wider than the glob: under
//! `/srv/data/*.csv`, `a.csv -> notes/b.txt` is followed because it stays in `/srv/data` (the
//! same folder the sandbox grants for that glob). A path admitted by several globs is bound to
//! the first that admits it, `fs.write` before `fs.read`, in declaration order. The root's own
//! path is the policy's, not the model's, and is opened as written (symlinks in it included).
//!
//! On Linux, most paths are opened faster, in one `openat2(RESOLVE_NO_SYMLINKS)` of the whole
//! normalized path, which the kernel refuses (`ELOOP`) if any component of it, the root's own
//! included, is a symlink. With no symlink on the way the walk is plain text: it goes through
//! the directory the root's path names at that moment and then only down, one admitted name at
//! a time, so the file it opens is beneath the root. When it fails for any reason (a symlink
//! that stays inside, one that leads out, a root that is itself a symlink, a missing file), the
//! path is opened beneath the root as above, which decides and explains. This makes an
//! argument's first read cost what `std::fs::read` costs. After an open by name meets a link,
//! the next few opens under the same root go beneath it first (the order changes only the
//! cost), so paths through links that stay inside do not pay a failed attempt each time. Opened roots are kept for later
//! calls; each first use by an argument checks, with one `stat` of the root's path, that the
//! path still names the kept directory, and reopens it if not.
//!
//! Binding happens where the arguments of a `#[tool]` (or `#[toolset]`) function are parsed, for
//! `ReadPath`/`WritePath` values anywhere in them (nested in a struct or a `Vec` too). Values
//! deserialized elsewhere (by another framework, e.g. rmcp under `#[tool_policy]`) and values
//! made with `new` have no root and every method refuses them; [`ReadPath::admit`](crate::ReadPath::admit)
//! and [`WritePath::admit`](crate::WritePath::admit) judge and bind such a path, with the gate's
//! own decision.
//!
//! Renames and removals open the *parent* directory beneath the root and then act on the last
//! name with `renameat`/`unlinkat`, which never follow a final symlink: renaming over a symlink
//! replaces the link, removing a symlink removes the link.
//!
//! Files are created with the explicit mode `0o666` (less the umask) in the `open` call itself,
//! never with a later `chmod`, so a created file never has the setuid or setgid bit; writing to
//! an existing file that has either bit is refused before it is truncated.
//!
//! Hard links are not symlinks: a hard link under the root *is* a name under the root for the
//! same inode, and is opened like any other file. Whoever can make a hard link into the root
//! could already write there; these methods never create links.
//!
//! Refusals are `std::io::Error`s of kind [`PermissionDenied`](std::io::ErrorKind::PermissionDenied)
//! whose message names the argument, the path and the root; the typed [`BeneathError`] is their
//! inner error.
//!
//! ```
//! use policy_runtime::{ReadPath, WritePath};
//! use policy_runtime::policy::ToolPolicy;
//!
//! let dir = tempfile::tempdir()?;
//! let root = dir.path().join("data");
//! std::fs::create_dir_all(&root)?;
//! std::fs::write(dir.path().join("secret"), "key")?;
//! std::os::unix::fs::symlink("../secret", root.join("link"))?;
//! let policy = ToolPolicy::from_json_str(
//!     "p",
//!     &format!(r#"{{"fs": {{"write": ["{}/**"]}}}}"#, root.display()),
//! )?;
//!
//! let report = WritePath::admit(&format!("{}/r.md", root.display()), &policy)?;
//! report.write("hello")?;
//! assert_eq!(ReadPath::admit(&format!("{}/r.md", root.display()), &policy)?.read_to_string()?, "hello");
//!
//! let link = ReadPath::admit(&format!("{}/link", root.display()), &policy)?; // the name is fine
//! let err = link.read().unwrap_err(); // the file it leads to is not
//! assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
//! assert!(err.to_string().contains(&root.display().to_string()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::cell::RefCell;
use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::denial::{Denial, DenialCode};
use crate::gate::check_path;
use crate::policy::ToolPolicy;
use crate::tool::Access;

/// Where an admitted path may be resolved: the literal directory of the glob that admitted it,
/// and the argument it came from (for messages).
///
/// On Linux the root directory is looked up once, when an operation first needs to resolve
/// beneath it (a symlink on the way: see the [module docs](self)), and that directory is the one
/// every later such operation through this grant resolves beneath (a path argument and its
/// clones share one). Operations with no symlink on the way go through the directory the
/// root's path names at that moment.
#[derive(Debug)]
pub struct Grant {
    root: PathBuf,
    argument: Option<String>,
    #[cfg(target_os = "linux")]
    root_fd: std::sync::OnceLock<Arc<std::os::fd::OwnedFd>>,
}

impl Grant {
    /// A grant for code that knows its own root (paths it did not get from the model).
    pub fn new(root: impl Into<PathBuf>, argument: Option<String>) -> Grant {
        Grant {
            root: root.into(),
            argument,
            #[cfg(target_os = "linux")]
            root_fd: std::sync::OnceLock::new(),
        }
    }

    /// The directory the path may not leave.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The argument the path came from, when known.
    pub fn argument(&self) -> Option<&str> {
        self.argument.as_deref()
    }
}

impl Clone for Grant {
    fn clone(&self) -> Grant {
        Grant::new(self.root.clone(), self.argument.clone())
    }
}

impl PartialEq for Grant {
    fn eq(&self, other: &Grant) -> bool {
        self.root == other.root && self.argument == other.argument
    }
}

impl Eq for Grant {}

/// How a path argument stands with respect to a root.
#[derive(Clone, Debug)]
pub(crate) enum Binding {
    /// Admitted beneath this grant.
    Bound(Arc<Grant>),
    /// Never judged (built with `new`, or deserialized outside a `#[tool]` call).
    Unbound,
    /// Judged while its tool's arguments were parsed, and refused for this access.
    Refused(Arc<str>),
}

/// Judges `raw` for `access` exactly as the gate does ([`check_path`]) and binds the normalized
/// path to the root of the glob that admitted it: `fs.write` globs first, then `fs.read` (for
/// reads), in declaration order.
pub(crate) fn admit(
    policy: &ToolPolicy,
    raw: &str,
    access: Access,
    argument: Option<&str>,
) -> Result<(PathBuf, Arc<Grant>), Denial> {
    let normalized = check_path(policy, raw, access, None)?;
    let lists = match access {
        Access::Write => [policy.fs.write.as_ref(), None],
        Access::Read | Access::Unknown => [policy.fs.write.as_ref(), policy.fs.read.as_ref()],
    };
    let glob = lists
        .into_iter()
        .flatten()
        .find_map(|list| list.first_match(&normalized));
    match glob {
        Some(glob) => Ok((
            PathBuf::from(normalized),
            Arc::new(Grant::new(
                glob.literal_dir(),
                argument.map(str::to_string),
            )),
        )),
        // Only a policy without `fs` admits a path that no glob matches.
        None => Err(Denial {
            code: DenialCode::PathNotAllowed,
            reason: format!(
                "`{normalized}` has no folder to be opened beneath: this tool declares no fs.read or fs.write globs."
            ),
            argument: argument.map(str::to_string),
            path: Some(normalized),
        }),
    }
}

thread_local! {
    /// The policy and argument name of the `#[tool]` call whose arguments are being parsed.
    static BINDING: RefCell<Option<(&'static ToolPolicy, String)>> = const { RefCell::new(None) };
}

/// Runs `parse` with path arguments binding to `policy` as they deserialize.
pub(crate) fn binding<R>(
    policy: &'static ToolPolicy,
    argument: &str,
    parse: impl FnOnce() -> R,
) -> R {
    struct Restore(Option<(&'static ToolPolicy, String)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            BINDING.with(|b| *b.borrow_mut() = previous);
        }
    }
    let previous = BINDING.with(|b| b.replace(Some((policy, argument.to_string()))));
    let _restore = Restore(previous);
    parse()
}

/// Binds a freshly deserialized path when a `#[tool]` call's arguments are being parsed.
pub(crate) fn bind(path: PathBuf, access: Access) -> (PathBuf, Binding) {
    BINDING.with(|b| match &*b.borrow() {
        Some((policy, argument)) => match path.to_str() {
            Some(raw) => match admit(policy, raw, access, Some(argument)) {
                Ok((path, grant)) => (path, Binding::Bound(grant)),
                Err(denial) => (path, Binding::Refused(denial.reason.into())),
            },
            None => (path, Binding::Refused("the path is not valid UTF-8".into())),
        },
        None => (path, Binding::Unbound),
    })
}

/// Why an operation beneath a root was refused or failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// A symlink (relative or absolute) or `..` leads out of the root.
    Escapes,
    /// A `/proc` magic link, or a symlink loop, on the way.
    MagicLinkOrLoop,
    /// The path was never admitted by the gate, so it has no root.
    NotAdmitted,
    /// Writing would modify a file that has the setuid or setgid bit.
    SetIdTarget,
    /// The root itself cannot be renamed or removed through a path beneath it.
    IsRoot,
    /// Writing would change a protected path ([`crate::protected`]): by its name, or because
    /// a symlink on the way leads into one (the detail says which).
    Protected,
    /// The operating system's error for this path (not found, not a directory, ...).
    Os,
}

/// A refused or failed operation beneath a root; the inner error of the `io::Error` the methods
/// return.
#[derive(Debug)]
pub struct BeneathError {
    problem: Problem,
    path: PathBuf,
    root: Option<PathBuf>,
    argument: Option<String>,
    detail: Option<String>,
    source: Option<io::Error>,
}

impl BeneathError {
    /// What went wrong.
    pub fn problem(&self) -> Problem {
        self.problem
    }

    /// The path the operation was asked for.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root it was resolved beneath, when it had one.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    fn into_io(self) -> io::Error {
        let kind = match self.problem {
            Problem::Escapes
            | Problem::MagicLinkOrLoop
            | Problem::NotAdmitted
            | Problem::SetIdTarget
            | Problem::Protected => io::ErrorKind::PermissionDenied,
            Problem::IsRoot => io::ErrorKind::InvalidInput,
            Problem::Os => self
                .source
                .as_ref()
                .map_or(io::ErrorKind::Other, io::Error::kind),
        };
        io::Error::new(kind, self)
    }
}

impl fmt::Display for BeneathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(argument) = &self.argument {
            write!(f, "argument `{argument}`: ")?;
        }
        let path = self.path.display();
        let root = self
            .root
            .as_deref()
            .map_or_else(String::new, |r| r.display().to_string());
        match self.problem {
            Problem::Escapes => write!(
                f,
                "`{path}` leads outside `{root}`, the folder it was admitted under (a symlink or `..` on the way points out of it; absolute symlinks are refused too)"
            ),
            Problem::MagicLinkOrLoop => write!(
                f,
                "`{path}` goes through a /proc magic link or a symlink loop; refused beneath `{root}`"
            ),
            Problem::NotAdmitted => {
                write!(f, "`{path}` was not admitted by the gate, so it has no folder to be opened beneath")?;
                match &self.detail {
                    Some(why) => write!(f, ": {why}"),
                    None => write!(
                        f,
                        " (a `#[tool]` function's path arguments are bound when its arguments are parsed; elsewhere use `ReadPath::admit` or `WritePath::admit`)"
                    ),
                }
            }
            Problem::SetIdTarget => write!(
                f,
                "refusing to write `{path}` beneath `{root}`: it has the setuid or setgid bit"
            ),
            Problem::IsRoot => write!(
                f,
                "`{path}` is the folder `{root}` itself, which cannot be renamed or removed through it"
            ),
            Problem::Protected => write!(
                f,
                "refusing to change `{path}` beneath `{root}`: {}",
                self.detail.as_deref().unwrap_or("it is a protected path")
            ),
            Problem::Os => {
                write!(f, "`{path}` (beneath `{root}`): ")?;
                match &self.source {
                    Some(e) => write!(f, "{e}"),
                    None => f.write_str("failed"),
                }
            }
        }
    }
}

impl std::error::Error for BeneathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// `path` without its leading `root`, on text where both are UTF-8 with `/` separators (every
/// admitted path is), else by components: on the first read of an argument, comparing
/// components costs as much as a system call.
fn relative<'p>(path: &'p Path, root: &Path) -> Option<&'p Path> {
    if cfg!(unix) {
        if let (Some(p), Some(r)) = (path.to_str(), root.to_str()) {
            let rest = p.strip_prefix(r)?;
            return if rest.is_empty() {
                Some(Path::new(""))
            } else if r.ends_with('/') {
                Some(Path::new(rest))
            } else {
                rest.strip_prefix('/').map(Path::new)
            };
        }
    }
    path.strip_prefix(root).ok()
}

/// Whether a relative path has only plain names (no `.`, `..`, empty or root components).
fn normal(rel: &Path) -> bool {
    match rel.to_str() {
        Some(text) if cfg!(unix) => {
            text.is_empty()
                || text
                    .split('/')
                    .all(|name| !name.is_empty() && name != "." && name != "..")
        }
        _ => rel.components().all(|c| matches!(c, Component::Normal(_))),
    }
}

/// A bound path split into its root and the relative rest, ready for an operation.
pub(crate) struct Target<'a> {
    path: &'a Path,
    grant: &'a Grant,
    rel: &'a Path,
}

impl<'a> Target<'a> {
    /// The target of `path`, or the error explaining why it has none.
    pub(crate) fn of(path: &'a Path, binding: &'a Binding) -> io::Result<Target<'a>> {
        let not_admitted = |detail: Option<String>, grant: Option<&Grant>| {
            BeneathError {
                problem: Problem::NotAdmitted,
                path: path.to_path_buf(),
                root: grant.map(|g| g.root.clone()),
                argument: grant.and_then(|g| g.argument.clone()),
                detail,
                source: None,
            }
            .into_io()
        };
        let grant = match binding {
            Binding::Bound(grant) => grant,
            Binding::Unbound => return Err(not_admitted(None, None)),
            Binding::Refused(why) => return Err(not_admitted(Some(why.to_string()), None)),
        };
        let rel = relative(path, &grant.root).ok_or_else(|| {
            not_admitted(
                Some(format!("it is not under `{}`", grant.root.display())),
                Some(grant),
            )
        })?;
        // Admitted paths are normalized; one built by hand might not be.
        if !normal(rel) {
            return Err(not_admitted(
                Some("it is not a normalized absolute path".to_string()),
                Some(grant),
            ));
        }
        Ok(Target { path, grant, rel })
    }

    fn error(&self, problem: Problem, source: Option<io::Error>) -> io::Error {
        BeneathError {
            problem,
            path: self.path.to_path_buf(),
            root: Some(self.grant.root.clone()),
            argument: self.grant.argument.clone(),
            detail: None,
            source,
        }
        .into_io()
    }

    /// The relative path, `.` for the root itself.
    fn rel_or_dot(&self) -> &Path {
        if self.rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            self.rel
        }
    }

    /// The parent (relative, `.` when the root) and the final name; the root itself has none.
    fn split(&self) -> io::Result<(&Path, &std::ffi::OsStr)> {
        match (self.rel.parent(), self.rel.file_name()) {
            (Some(parent), Some(name)) => Ok((
                if parent.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    parent
                },
                name,
            )),
            _ => Err(self.error(Problem::IsRoot, None)),
        }
    }
}

/// How files are opened beneath a root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`.
    #[cfg(target_os = "linux")]
    Openat2,
    /// cap-std's resolution beneath a directory handle.
    Portable,
}

thread_local! {
    static FORCE_PORTABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Opens this thread made by the whole name (no symlink on the way), for tests to see
    /// which way a path went.
    static BY_NAME: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many files and directories this thread has opened by their whole name (no symlink on
/// the way) rather than beneath a descriptor of their root; see the [module docs](self).
#[doc(hidden)]
pub fn opened_by_name() -> u64 {
    BY_NAME.with(|n| n.get())
}

/// Runs `f` with this thread's operations on the portable (cap-std) backend, so tests on a
/// kernel with `openat2` exercise the fallback too.
#[doc(hidden)]
pub fn with_portable_backend<R>(f: impl FnOnce() -> R) -> R {
    let previous = FORCE_PORTABLE.with(|p| p.replace(true));
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0;
            FORCE_PORTABLE.with(|p| p.set(previous));
        }
    }
    let _restore = Restore(previous);
    f()
}

/// Whether this process resolves paths with `openat2` (Linux, until the kernel first answers
/// `ENOSYS`); otherwise the portable backend does.
pub fn uses_openat2() -> bool {
    #[cfg(target_os = "linux")]
    {
        linux::available()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

fn backend() -> Backend {
    if FORCE_PORTABLE.with(|p| p.get()) {
        return Backend::Portable;
    }
    #[cfg(target_os = "linux")]
    if linux::available() {
        return Backend::Openat2;
    }
    Backend::Portable
}

/// Runs the Linux implementation, or the portable one when this kernel has no `openat2`.
macro_rules! dispatch {
    ($op:ident($($arg:expr),*)) => {{
        match backend() {
            #[cfg(target_os = "linux")]
            Backend::Openat2 => match linux::$op($($arg),*) {
                Err(linux::Failure::Unsupported) => portable::$op($($arg),*),
                Err(linux::Failure::Io(e)) => Err(e),
                Ok(v) => Ok(v),
            },
            Backend::Portable => portable::$op($($arg),*),
        }
    }};
}

/// Opens the file for reading.
pub(crate) fn open(t: &Target<'_>) -> io::Result<File> {
    dispatch!(open(t))
}

/// The names in the directory, sorted.
pub(crate) fn list(t: &Target<'_>) -> io::Result<Vec<OsString>> {
    let mut names = dispatch!(list(t))?;
    names.sort();
    Ok(names)
}

/// Refuses a write that would change a protected path ([`crate::protected::process_list`]):
/// by the admitted name (which the gate judged too), or by where the name leads on disk now,
/// after the symlinks of its existing parent directories (a link inside the root pointing at
/// `.git/hooks` leads a harmless name to a hook).
fn guard_protected(t: &Target<'_>) -> io::Result<()> {
    let list = crate::protected::process_list();
    if list.is_empty() {
        return Ok(());
    }
    let refuse = |detail: String| {
        BeneathError {
            problem: Problem::Protected,
            path: t.path.to_path_buf(),
            root: Some(t.grant.root.clone()),
            argument: t.grant.argument.clone(),
            detail: Some(detail),
            source: None,
        }
        .into_io()
    };
    let name = t.path.to_string_lossy();
    if let Some(hit) = list.check(t.path) {
        return Err(refuse(hit.explain(&name)));
    }
    // The deepest existing ancestor, resolved, with the rest of the name appended.
    let mut existing = t.path;
    let mut rest = Vec::new();
    while let Some(parent) = existing.parent() {
        if let Some(last) = existing.file_name() {
            rest.push(last);
        }
        existing = parent;
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut resolved = real;
            for part in rest.iter().rev() {
                resolved.push(part);
            }
            // The final name itself may be a symlink: writing through it changes its target.
            if let Ok(target) = std::fs::canonicalize(&resolved) {
                resolved = target;
            }
            if let Some(hit) = list.check(&resolved) {
                let detail = format!(
                    "it leads to `{}` on disk, and {}",
                    resolved.display(),
                    hit.explain(&resolved.to_string_lossy())
                );
                return Err(refuse(detail));
            }
            break;
        }
    }
    Ok(())
}

/// Opens the file for writing, creating it (`create_new`: it must not exist), and empties it.
pub(crate) fn create(t: &Target<'_>, create_new: bool) -> io::Result<File> {
    guard_protected(t)?;
    let file = dispatch!(create(t, create_new))?;
    let metadata = file.metadata().map_err(|e| t.error(Problem::Os, Some(e)))?;
    if set_id(&metadata) {
        return Err(t.error(Problem::SetIdTarget, None));
    }
    if !create_new {
        file.set_len(0).map_err(|e| t.error(Problem::Os, Some(e)))?;
    }
    Ok(file)
}

#[cfg(unix)]
fn set_id(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    metadata.permissions().mode() & 0o6000 != 0
}

#[cfg(not(unix))]
fn set_id(_metadata: &std::fs::Metadata) -> bool {
    false
}

/// Renames `from` to `to` (each beneath its own root), replacing `to` if it exists.
pub(crate) fn rename(from: &Target<'_>, to: &Target<'_>) -> io::Result<()> {
    guard_protected(from)?;
    guard_protected(to)?;
    dispatch!(rename(from, to))
}

/// Removes the file (or symlink) itself.
pub(crate) fn remove_file(t: &Target<'_>) -> io::Result<()> {
    guard_protected(t)?;
    dispatch!(remove_file(t))
}

/// Removes the empty directory.
pub(crate) fn remove_dir(t: &Target<'_>) -> io::Result<()> {
    guard_protected(t)?;
    dispatch!(remove_dir(t))
}

/// The mode new files are created with, before the umask: never setuid, setgid or sticky.
#[cfg_attr(not(unix), allow(dead_code))] // files on other systems have no mode bits
const CREATE_MODE: u32 = 0o666;

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::{OsStr, OsString};
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};

    use rustix::fs::{openat2, AtFlags, Mode, OFlags, ResolveFlags, CWD};
    use rustix::io::Errno;

    use super::{Problem, Target, CREATE_MODE};

    /// Set once `openat2` answered `ENOSYS`.
    static MISSING: AtomicBool = AtomicBool::new(false);

    /// `openat2` fails with `EAGAIN` when a rename anywhere on the host races a `..` lookup
    /// beneath the root; it is retried this many times before the error is returned.
    const RETRIES: usize = 64;

    /// Root directories stay open between calls: a tool's first read of an argument would
    /// otherwise open its root too, which costs as much as the read. Each use checks, with one
    /// `stat` of the root's path, that the path still names the directory held open (the held
    /// descriptor keeps its inode number from being reused), and reopens it when not.
    mod roots {
        use std::os::fd::OwnedFd;
        use std::path::{Path, PathBuf};
        use std::sync::{Arc, Mutex};

        use rustix::fs::{Mode, OFlags};
        use rustix::io::Errno;

        /// A root held open: its path, the (device, inode) it had when opened, the descriptor.
        struct Held {
            path: PathBuf,
            id: (u64, u64),
            fd: Arc<OwnedFd>,
        }

        /// Roots held open, at most [`HELD`] of them.
        static OPEN: Mutex<Vec<Held>> = Mutex::new(Vec::new());
        const HELD: usize = 64;

        pub(in super::super) fn open(root: &Path) -> Result<Arc<OwnedFd>, Errno> {
            let now = rustix::fs::stat(root)?;
            let id = (now.st_dev, now.st_ino);
            let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
            // Byte equality: roots are normalized, and `Path`'s own equality compares components.
            if let Some(held) = open
                .iter()
                .find(|h| h.path.as_os_str() == root.as_os_str() && h.id == id)
            {
                return Ok(Arc::clone(&held.fd));
            }
            let fd = rustix::fs::open(
                root,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let opened = rustix::fs::fstat(&fd)?;
            let fd = Arc::new(fd);
            open.retain(|h| h.path.as_os_str() != root.as_os_str());
            if open.len() >= HELD {
                open.remove(0);
            }
            open.push(Held {
                path: root.to_path_buf(),
                id: (opened.st_dev, opened.st_ino),
                fd: Arc::clone(&fd),
            });
            Ok(fd)
        }
    }

    /// Which way to try first for a root. Both ways give the same answer (see
    /// [`open_beneath`]), so this only decides the cost: a path with a symlink that stays in
    /// the root pays a failed open by name before the open beneath the root, which made such
    /// reads 1.6× a plain read instead of 1.3×. A root under which an open by name just met a
    /// link is opened beneath first for its next [`BENEATH_RUN`] opens, then by name once
    /// again, so a root whose links are gone returns to the cheaper way. Roots are told apart
    /// by a hash of their path in a small table; a collision only picks the other order.
    mod order {
        use std::os::unix::ffi::OsStrExt;
        use std::path::Path;
        use std::sync::atomic::{AtomicU64, Ordering};

        const SLOTS: usize = 64;
        /// Opens beneath the root before the next attempt by name.
        pub(super) const BENEATH_RUN: u64 = 15;
        /// Each slot: the root's hash above the low byte, opens left beneath in the low byte.
        static LINKED: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

        fn slot(root: &Path) -> (&'static AtomicU64, u64) {
            // FNV-1a: a few nanoseconds for a path, beside system calls of a microsecond.
            let hash = root
                .as_os_str()
                .as_bytes()
                .iter()
                .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
            (&LINKED[(hash as usize) % SLOTS], hash & !0xff)
        }

        pub(super) fn by_name_first(root: &Path) -> bool {
            let (slot, tag) = slot(root);
            let now = slot.load(Ordering::Relaxed);
            if now & !0xff != tag || now & 0xff == 0 {
                return true;
            }
            // A lost race between threads only shifts when the next attempt by name comes.
            slot.store(now - 1, Ordering::Relaxed);
            false
        }

        pub(super) fn met_a_link(root: &Path) {
            let (slot, tag) = slot(root);
            slot.store(tag | BENEATH_RUN, Ordering::Relaxed);
        }
    }

    pub(super) fn available() -> bool {
        !MISSING.load(Ordering::Relaxed)
    }

    /// Why the Linux path did not produce a result.
    pub(super) enum Failure {
        /// This kernel has no `openat2`: use the portable backend.
        Unsupported,
        /// The operation's error, already explained.
        Io(io::Error),
    }

    impl From<io::Error> for Failure {
        fn from(e: io::Error) -> Failure {
            Failure::Io(e)
        }
    }

    type Result<T> = std::result::Result<T, Failure>;

    pub(super) fn error(t: &Target<'_>, e: Errno) -> io::Error {
        match e {
            Errno::XDEV => t.error(Problem::Escapes, Some(e.into())),
            Errno::LOOP => t.error(Problem::MagicLinkOrLoop, Some(e.into())),
            _ => t.error(Problem::Os, Some(e.into())),
        }
    }

    /// Opens `whole` (the target's path or its parent), which is the target's root followed by
    /// `rel`: by its whole name when no component of it is a symlink, else beneath the root.
    ///
    /// Why the first way is as safe as the second: `openat2(RESOLVE_NO_SYMLINKS)` walks `whole`
    /// one name at a time and fails (`ELOOP`) at the first symlink, magic link or not, the last
    /// name included. Without symlinks a walk is plain text: it reaches the directory the root's
    /// path names at that moment (what the kept root is checked against, and what it is reopened
    /// as), then takes the names of `rel`, which has no `.` or `..` (see [`Target::of`]), so each
    /// step goes one directory down from the root, never up or sideways. The file reached is
    /// the one the second way reaches with the root freshly checked, in one system call, with
    /// no window between a check and the open. Any failure (a symlink on the way, a missing
    /// file) goes the second way, which follows symlinks that stay beneath the root and
    /// explains the rest in its own words; only `ENOSYS` is final (no `openat2` at all).
    /// Neither `EAGAIN` (only `..` lookups under `RESOLVE_BENEATH` race renames) nor `EXDEV`
    /// (no `RESOLVE_NO_XDEV`) can come from the first way; mounts are crossed downwards by both
    /// ways alike. Since both give the same answer, a root where links were just met skips
    /// the first way for a while ([`order`]).
    fn open_beneath(
        t: &Target<'_>,
        whole: &Path,
        rel: &Path,
        flags: OFlags,
        mode: Mode,
    ) -> Result<OwnedFd> {
        // openat2 is strict: O_PATH takes no flags but O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC.
        let flags = if flags.contains(OFlags::PATH) {
            flags | OFlags::CLOEXEC
        } else {
            flags | OFlags::CLOEXEC | OFlags::NOCTTY
        };
        let by_name_first = order::by_name_first(t.grant.root());
        let mut by_name_met_a_link = false;
        if by_name_first {
            match openat2(CWD, whole, flags, mode, ResolveFlags::NO_SYMLINKS) {
                Ok(fd) => {
                    super::BY_NAME.with(|n| n.set(n.get() + 1));
                    return Ok(fd);
                }
                Err(Errno::NOSYS) => {
                    MISSING.store(true, Ordering::Relaxed);
                    return Err(Failure::Unsupported);
                }
                Err(e) => by_name_met_a_link = e == Errno::LOOP,
            }
        }
        let root = match t.grant.root_fd.get() {
            Some(fd) => fd,
            None => {
                let fd = roots::open(t.grant.root()).map_err(|e| error(t, e))?;
                // A racing first use may have set it: either descriptor is the root.
                t.grant.root_fd.get_or_init(|| fd)
            }
        };
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let mut result = Err(Errno::AGAIN);
        for _ in 0..RETRIES {
            result = openat2(root.as_fd(), rel, flags, mode, resolve);
            if !matches!(result, Err(Errno::AGAIN)) {
                break;
            }
        }
        if by_name_met_a_link && result.is_ok() {
            order::met_a_link(t.grant.root());
        }
        result.map_err(|e| {
            if e == Errno::NOSYS {
                MISSING.store(true, Ordering::Relaxed);
                Failure::Unsupported
            } else {
                Failure::Io(error(t, e))
            }
        })
    }

    /// The target's parent directory (opened beneath the root) and final name.
    fn parent<'t>(t: &'t Target<'_>) -> Result<(OwnedFd, &'t OsStr)> {
        let (parent, name) = t.split()?;
        // `split` succeeded, so the path has a last name to drop.
        let whole = t.path.parent().unwrap_or(t.path);
        let flags = OFlags::PATH | OFlags::DIRECTORY;
        let fd = open_beneath(t, whole, parent, flags, Mode::empty())?;
        Ok((fd, name))
    }

    pub(super) fn open(t: &Target<'_>) -> Result<File> {
        open_beneath(t, t.path, t.rel_or_dot(), OFlags::RDONLY, Mode::empty()).map(File::from)
    }

    pub(super) fn list(t: &Target<'_>) -> Result<Vec<OsString>> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        let fd = open_beneath(t, t.path, t.rel_or_dot(), flags, Mode::empty())?;
        let dir = rustix::fs::Dir::new(fd).map_err(|e| error(t, e))?;
        let mut names = Vec::new();
        for entry in dir {
            let entry = entry.map_err(|e| error(t, e))?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(OsStr::from_bytes(name).to_os_string());
            }
        }
        Ok(names)
    }

    pub(super) fn create(t: &Target<'_>, create_new: bool) -> Result<File> {
        let mut flags = OFlags::WRONLY | OFlags::CREATE;
        if create_new {
            flags |= OFlags::EXCL;
        }
        let mode = Mode::from_bits_truncate(CREATE_MODE);
        open_beneath(t, t.path, t.rel_or_dot(), flags, mode).map(File::from)
    }

    pub(super) fn rename(from: &Target<'_>, to: &Target<'_>) -> Result<()> {
        let (from_dir, from_name) = parent(from)?;
        let (to_dir, to_name) = parent(to)?;
        rustix::fs::renameat(&from_dir, from_name, &to_dir, to_name)
            .map_err(|e| Failure::Io(error(to, e)))
    }

    pub(super) fn remove_file(t: &Target<'_>) -> Result<()> {
        let (dir, name) = parent(t)?;
        rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(|e| Failure::Io(error(t, e)))
    }

    pub(super) fn remove_dir(t: &Target<'_>) -> Result<()> {
        let (dir, name) = parent(t)?;
        rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR).map_err(|e| Failure::Io(error(t, e)))
    }
}

mod portable {
    use std::ffi::OsString;
    use std::fs::File;
    use std::io;

    use cap_std::ambient_authority;
    use cap_std::fs::{Dir, OpenOptions};

    use super::{Problem, Target};

    /// cap-std's refusals are `PermissionDenied` errors it makes itself (no OS error number).
    fn error(t: &Target<'_>, e: io::Error) -> io::Error {
        if e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none() {
            t.error(Problem::Escapes, Some(e))
        } else if is_loop(&e) {
            t.error(Problem::MagicLinkOrLoop, Some(e))
        } else {
            t.error(Problem::Os, Some(e))
        }
    }

    #[cfg(target_os = "linux")]
    fn is_loop(e: &io::Error) -> bool {
        e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
    }

    #[cfg(not(target_os = "linux"))]
    fn is_loop(_e: &io::Error) -> bool {
        false
    }

    fn root(t: &Target<'_>) -> io::Result<Dir> {
        Dir::open_ambient_dir(t.grant.root(), ambient_authority()).map_err(|e| error(t, e))
    }

    pub(super) fn open(t: &Target<'_>) -> io::Result<File> {
        let dir = root(t)?;
        dir.open(t.rel_or_dot())
            .map(|f| f.into_std())
            .map_err(|e| error(t, e))
    }

    pub(super) fn list(t: &Target<'_>) -> io::Result<Vec<OsString>> {
        let dir = root(t)?;
        let dir = if t.rel.as_os_str().is_empty() {
            dir
        } else {
            dir.open_dir(t.rel).map_err(|e| error(t, e))?
        };
        let mut names = Vec::new();
        for entry in dir.entries().map_err(|e| error(t, e))? {
            names.push(entry.map_err(|e| error(t, e))?.file_name());
        }
        Ok(names)
    }

    pub(super) fn create(t: &Target<'_>, create_new: bool) -> io::Result<File> {
        let dir = root(t)?;
        let mut options = OpenOptions::new();
        options.write(true);
        if create_new {
            options.create_new(true);
        } else {
            options.create(true);
        }
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            options.mode(super::CREATE_MODE);
        }
        dir.open_with(t.rel_or_dot(), &options)
            .map(|f| f.into_std())
            .map_err(|e| error(t, e))
    }

    pub(super) fn rename(from: &Target<'_>, to: &Target<'_>) -> io::Result<()> {
        let (from_parent, from_name) = from.split()?;
        let (to_parent, to_name) = to.split()?;
        let from_dir = root(from)?
            .open_dir(from_parent)
            .map_err(|e| error(from, e))?;
        let to_dir = root(to)?.open_dir(to_parent).map_err(|e| error(to, e))?;
        from_dir
            .rename(from_name, &to_dir, to_name)
            .map_err(|e| error(to, e))
    }

    pub(super) fn remove_file(t: &Target<'_>) -> io::Result<()> {
        let (parent, name) = t.split()?;
        root(t)?
            .open_dir(parent)
            .and_then(|d| d.remove_file(name))
            .map_err(|e| error(t, e))
    }

    pub(super) fn remove_dir(t: &Target<'_>) -> io::Result<()> {
        let (parent, name) = t.split()?;
        root(t)?
            .open_dir(parent)
            .and_then(|d| d.remove_dir(name))
            .map_err(|e| error(t, e))
    }
}
