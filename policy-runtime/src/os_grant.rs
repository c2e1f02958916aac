//! What an OS sandbox that grants whole files and directory trees (Landlock, bind mounts)
//! grants for one glob: decided here, once, for the sandbox plan (which enforces it) and the
//! `#[tool]` attribute (which warns about it at compile time).
//!
//! The decision needs one fact about the machine the tool runs on: whether a fully literal
//! glob names an existing file. This crate does no OS work, so the caller answers it through a
//! probe: the sandbox looks at the filesystem when the tool starts; the attribute cannot know
//! at compile time and answers "unknown", which yields [`OsGrant::FileIfExists`], the exact
//! statement of what the sandbox will do.
//!
//! ```
//! use std::path::Path;
//! use policy_runtime::glob::Glob;
//! use policy_runtime::os_grant::OsGrant;
//!
//! let hosts = Glob::new("/etc/hosts")?;
//! // At run time the sandbox knows: an existing file is granted exactly.
//! assert_eq!(OsGrant::of(&hosts, |_| Some(true)), OsGrant::File("/etc/hosts".into()));
//! assert_eq!(OsGrant::of(&hosts, |_| Some(false)), OsGrant::Widened { root: "/etc".into() });
//! // At compile time it is not known yet.
//! assert_eq!(
//!     OsGrant::of(&hosts, |_| None),
//!     OsGrant::FileIfExists { file: "/etc/hosts".into(), otherwise: "/etc".into() }
//! );
//! assert_eq!(OsGrant::of(&Glob::new("/data/**")?, |_| None), OsGrant::Tree("/data".into()));
//! assert_eq!(
//!     OsGrant::of(&Glob::new("/data/*.csv")?, |_| None),
//!     OsGrant::Widened { root: "/data".into() }
//! );
//! # Ok::<(), policy_runtime::glob::GlobError>(())
//! ```

use std::path::{Path, PathBuf};

use crate::glob::Glob;

/// What the OS grants for a glob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OsGrant {
    /// The tree at this directory, exactly the glob (`prefix/**`).
    Tree(PathBuf),
    /// Exactly this file: a fully literal glob naming an existing non-directory.
    File(PathBuf),
    /// The tree at `root`, wider than the glob: the glob's longest literal directory prefix.
    Widened {
        /// The directory whose whole tree is granted.
        root: PathBuf,
    },
    /// A fully literal glob whose file's existence is not known yet (at compile time): the
    /// file exactly if it is an existing non-directory when the sandbox starts, otherwise the
    /// tree at `otherwise`.
    FileIfExists {
        /// The file the glob names.
        file: PathBuf,
        /// The directory whose tree is granted when it is not an existing file.
        otherwise: PathBuf,
    },
}

impl OsGrant {
    /// The grant for `glob`. `is_file` answers, for a fully literal glob's path, whether it is
    /// an existing non-directory (`None`: cannot be known here); it is not called otherwise.
    pub fn of(glob: &Glob, is_file: impl FnOnce(&Path) -> Option<bool>) -> OsGrant {
        let root = glob.literal_dir();
        if glob.is_tree() {
            return OsGrant::Tree(root);
        }
        let literal = glob.components().iter().all(|c| c.as_literal().is_some());
        if !literal {
            return OsGrant::Widened { root };
        }
        let file = glob.literal_prefix();
        match is_file(&file) {
            Some(true) => OsGrant::File(file),
            Some(false) => OsGrant::Widened { root },
            None => OsGrant::FileIfExists {
                file,
                otherwise: root,
            },
        }
    }

    /// Whether the grant is exactly the glob (a tree or an existing file).
    pub fn is_exact(&self) -> bool {
        matches!(self, OsGrant::Tree(_) | OsGrant::File(_))
    }

    /// The wider tree that may be granted, written as a glob (`/etc/**`, `/**`); `None` when
    /// the grant is exact.
    pub fn wider_tree(&self) -> Option<String> {
        match self {
            OsGrant::Tree(_) | OsGrant::File(_) => None,
            OsGrant::Widened { root }
            | OsGrant::FileIfExists {
                otherwise: root, ..
            } => Some(tree_glob(root)),
        }
    }
}

/// `dir/**`, and `/**` for the root.
fn tree_glob(dir: &Path) -> String {
    if dir == Path::new("/") {
        "/**".to_string()
    } else {
        format!("{}/**", dir.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(glob: &str, is_file: Option<bool>) -> OsGrant {
        OsGrant::of(&Glob::new(glob).unwrap(), |_| is_file)
    }

    #[test]
    fn every_kind_of_glob() {
        assert_eq!(grant("/**", None), OsGrant::Tree("/".into()));
        assert_eq!(grant("/a/b/**", Some(false)), OsGrant::Tree("/a/b".into()));
        assert_eq!(grant("/*.txt", None).wider_tree().as_deref(), Some("/**"));
        assert_eq!(
            grant("/a/**/b", Some(true)),
            OsGrant::Widened { root: "/a".into() }
        );
        assert_eq!(grant("/a/b", Some(true)), OsGrant::File("/a/b".into()));
        assert!(grant("/a/b", Some(true)).is_exact());
        let unknown = grant("/a/b", None);
        assert!(!unknown.is_exact());
        assert_eq!(unknown.wider_tree().as_deref(), Some("/a/**"));
    }

    #[test]
    fn the_probe_is_asked_only_about_literal_globs() {
        let glob = Glob::new("/data/*.csv").unwrap();
        let grant = OsGrant::of(&glob, |_| panic!("not a literal glob"));
        assert_eq!(
            grant,
            OsGrant::Widened {
                root: "/data".into()
            }
        );
        let mut asked = None;
        OsGrant::of(&Glob::new("/etc/hosts").unwrap(), |p| {
            asked = Some(p.to_path_buf());
            Some(true)
        });
        assert_eq!(asked.as_deref(), Some(Path::new("/etc/hosts")));
    }
}
