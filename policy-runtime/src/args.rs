//! Typed path arguments that say how a tool uses a path.
//!
//! A tool parameter of type [`ReadPath`] is judged against `fs.read ∪ fs.write`; one of type
//! [`WritePath`] against `fs.write` only. By the time the body sees them, the gate has replaced
//! the model's string with the normalized absolute path it judged, so the body opens exactly
//! what was allowed.
//!
//! ```
//! use policy_runtime::args::{ReadPath, WritePath};
//!
//! let p: WritePath = serde_json::from_value(serde_json::json!("/out/report.md"))?;
//! assert_eq!(p.as_path().to_str(), Some("/out/report.md"));
//! let r: ReadPath = serde_json::from_value(serde_json::json!("/data/a.csv"))?;
//! assert!(r.starts_with("/data"));
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::ops::Deref;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::tool::Access;

macro_rules! path_arg {
    ($name:ident, $access:expr, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(PathBuf);

        impl $name {
            /// How the gate judges arguments of this type.
            pub const ACCESS: Access = $access;

            /// Wraps a path (the gate still judges it when the tool is dispatched).
            pub fn new(path: impl Into<PathBuf>) -> Self {
                $name(path.into())
            }

            /// The path.
            pub fn as_path(&self) -> &Path {
                &self.0
            }

            /// The owned path.
            pub fn into_path_buf(self) -> PathBuf {
                self.0
            }
        }

        impl Deref for $name {
            type Target = Path;
            fn deref(&self) -> &Path {
                &self.0
            }
        }

        impl AsRef<Path> for $name {
            fn as_ref(&self) -> &Path {
                &self.0
            }
        }
    };
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
