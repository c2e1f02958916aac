//! Typed path arguments that say how a tool uses a path.
//!
//! A tool parameter of type [`ReadPath`] is judged against `fs.read ∪ fs.write`; one of type
//! [`WritePath`] against `fs.write` only. By the time the body sees them, the gate has replaced
//! the model's string with the normalized absolute path it judged, and the path is bound to the
//! root of the glob that admitted it, so the file methods ([`ReadPath::read`],
//! [`WritePath::write`], ...) open exactly what was allowed, symlinks included (see
//! [`crate::beneath`]).
//!
//! ```
//! use policy_runtime::args::{ReadPath, WritePath};
//!
//! // Built by hand: a path, but no root, so its file methods refuse it.
//! assert!(ReadPath::new("/etc/hostname").read().is_err());
//! let p: WritePath = serde_json::from_value(serde_json::json!("/out/report.md"))?;
//! assert_eq!(p.as_path().to_str(), Some("/out/report.md"));
//! let r: ReadPath = serde_json::from_value(serde_json::json!("/data/a.csv"))?;
//! assert!(r.starts_with("/data"));
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::beneath::{self, Binding, Grant, Target};
use crate::denial::Denial;
use crate::policy::ToolPolicy;
use crate::tool::Access;

macro_rules! path_arg {
    ($name:ident, $access:expr, $doc:literal) => {
        #[doc = $doc]
        ///
        /// The methods (`open`, `read`, `read_to_string`, `list`, and for [`WritePath`] also
        /// `create`, `write`, `rename_to`, `remove_file`, `remove_dir`) resolve the path beneath
        /// the root of the glob that admitted it, and refuse a symlink that leaves it: see
        /// [`crate::beneath`]. A path is bound to that root when a `#[tool]` function's arguments
        /// are parsed, or by `admit`; one built with `new` has no root and every method refuses
        /// it. Equality and hashing look at the path only.
        #[derive(Clone, Debug)]
        pub struct $name {
            path: PathBuf,
            binding: Binding,
        }

        impl $name {
            /// How the gate judges arguments of this type.
            pub const ACCESS: Access = $access;

            /// Wraps a path, without a root: the gate still judges it when the tool is
            /// dispatched, but this value's file methods refuse it (use `admit`).
            pub fn new(path: impl Into<PathBuf>) -> Self {
                $name {
                    path: path.into(),
                    binding: Binding::Unbound,
                }
            }

            /// Judges `raw` for this access against `policy`, exactly as the gate does, and
            /// binds the normalized path to the root of the glob that admitted it. This is the
            /// way to open a path that reached the tool some other way (a plain string argument,
            /// a field of a nested object, a function dispatched by another framework).
            pub fn admit(raw: &str, policy: &ToolPolicy) -> Result<Self, Denial> {
                let (path, grant) = beneath::admit(policy, raw, $access, None)?;
                Ok($name {
                    path,
                    binding: Binding::Bound(grant),
                })
            }

            /// Binds `path` to `root` without asking a policy, for paths the tool's own code
            /// chose (not the model). `path` must be a normalized absolute path under `root`.
            pub fn beneath(root: impl Into<PathBuf>, path: impl Into<PathBuf>) -> Self {
                $name {
                    path: path.into(),
                    binding: Binding::Bound(Arc::new(Grant::new(root, None))),
                }
            }

            /// The path.
            pub fn as_path(&self) -> &Path {
                &self.path
            }

            /// The owned path.
            pub fn into_path_buf(self) -> PathBuf {
                self.path
            }

            /// The root this path is bound to, if it is.
            pub fn grant(&self) -> Option<&Grant> {
                match &self.binding {
                    Binding::Bound(grant) => Some(grant),
                    _ => None,
                }
            }

            fn target(&self) -> io::Result<Target<'_>> {
                Target::of(&self.path, &self.binding)
            }

            /// Opens the file for reading, beneath the root.
            pub fn open(&self) -> io::Result<File> {
                beneath::open(&self.target()?)
            }

            /// Reads the whole file, beneath the root: as many bytes as the file's size when it
            /// was opened (a file without a size, like those of `/proc`, to its end).
            pub fn read(&self) -> io::Result<Vec<u8>> {
                read_all(self.open()?)
            }

            /// Reads the whole file as UTF-8, beneath the root.
            pub fn read_to_string(&self) -> io::Result<String> {
                String::from_utf8(self.read()?)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
            }

            /// The names of the directory's entries, sorted, beneath the root.
            pub fn list(&self) -> io::Result<Vec<OsString>> {
                beneath::list(&self.target()?)
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.path == other.path
            }
        }

        impl Eq for $name {}

        impl std::hash::Hash for $name {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.path.hash(state)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.path.serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let (path, binding) = beneath::bind(PathBuf::deserialize(d)?, $access);
                Ok($name { path, binding })
            }
        }

        impl Deref for $name {
            type Target = Path;
            fn deref(&self) -> &Path {
                &self.path
            }
        }

        impl AsRef<Path> for $name {
            fn as_ref(&self) -> &Path {
                &self.path
            }
        }
    };
}

/// Reads a whole file: sized from one `fstat`, then read until that many bytes have arrived.
///
/// Unlike `std::fs::read`, it does not ask once more to confirm the end of the file when the
/// file gave exactly the size it reported: that final `read` is a system call of its own, which
/// the safe read spends instead on checking its root. So bytes appended after the file was
/// opened are not read (the file as it was at `fstat`). A file that reports no size, or less
/// than it reported (`/proc`, `/sys`, a file truncated meanwhile), is read to its end.
fn read_all(mut file: File) -> io::Result<Vec<u8>> {
    struct Plain<'f>(&'f mut File);
    impl Read for Plain<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }
    let size = file.metadata().map_or(0, |m| m.len() as usize);
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(size).map_err(io::Error::other)?;
    if size > 0 {
        bytes.resize(size, 0);
        let mut filled = 0;
        while filled < size {
            match file.read(&mut bytes[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        bytes.truncate(filled);
        if filled == size {
            return Ok(bytes);
        }
    }
    Plain(&mut file).read_to_end(&mut bytes)?;
    Ok(bytes)
}

path_arg!(
    ReadPath,
    Access::Read,
    "A path the tool reads (judged against `fs.read ∪ fs.write`)."
);
path_arg!(
    WritePath,
    Access::Write,
    "A path the tool creates, modifies or deletes (judged against `fs.write`)."
);

impl WritePath {
    /// Creates the file, or empties it if it exists, and opens it for writing, beneath the
    /// root. A new file gets mode `0o666` less the umask (never setuid or setgid); an existing
    /// file with the setuid or setgid bit is refused before it is emptied.
    pub fn create(&self) -> io::Result<File> {
        beneath::create(&self.target()?, false)
    }

    /// Like [`WritePath::create`], but the file must not exist yet (not even as a symlink).
    pub fn create_new(&self) -> io::Result<File> {
        beneath::create(&self.target()?, true)
    }

    /// Writes `contents` as the whole file (created or emptied first), beneath the root.
    pub fn write(&self, contents: impl AsRef<[u8]>) -> io::Result<()> {
        self.create()?.write_all(contents.as_ref())
    }

    /// Renames this file or directory to `to`, replacing `to` if it exists (a symlink at `to`
    /// is replaced, not followed). Each side is resolved beneath its own root.
    pub fn rename_to(&self, to: &WritePath) -> io::Result<()> {
        beneath::rename(&self.target()?, &to.target()?)
    }

    /// Removes the file (a symlink itself, never what it points to), beneath the root.
    pub fn remove_file(&self) -> io::Result<()> {
        beneath::remove_file(&self.target()?)
    }

    /// Removes the empty directory, beneath the root.
    pub fn remove_dir(&self) -> io::Result<()> {
        beneath::remove_dir(&self.target()?)
    }
}

/// Implemented by argument types the `#[tool]` macro recognizes as paths, including
/// `Vec<ReadPath>` and `Option<WritePath>`.
pub trait PathArgument {
    /// How the gate judges it.
    const ACCESS: Access;
}

impl PathArgument for ReadPath {
    const ACCESS: Access = Access::Read;
}

impl PathArgument for WritePath {
    const ACCESS: Access = Access::Write;
}

impl<T: PathArgument> PathArgument for Vec<T> {
    const ACCESS: Access = T::ACCESS;
}

impl<T: PathArgument> PathArgument for Option<T> {
    const ACCESS: Access = T::ACCESS;
}
