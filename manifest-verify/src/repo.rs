//! Where the repository is, so that locations in `github` and `sarif` output are relative to its
//! root (as GitHub resolves them), whatever directory the command runs in.
//!
//! Outside a git work tree nothing is rewritten: paths stay as given.

use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The root of the git work tree containing the current directory, and the current directory's
/// path inside it (`""` at the root, `"examples/"` one level down), as git reports them.
#[derive(Clone, Debug)]
pub struct Repo {
    /// The absolute, canonical root.
    pub root: PathBuf,
    /// The current directory relative to the root, ending in `/` unless empty.
    pub prefix: String,
}

/// The repository of the current directory (asked once), or `None` outside one or without git.
pub fn current() -> Option<&'static Repo> {
    static REPO: OnceLock<Option<Repo>> = OnceLock::new();
    REPO.get_or_init(|| {
        let output = Command::new("git")
            .args(["rev-parse", "--show-toplevel", "--show-prefix"])
            .output()
            .ok()?;
        if !output.status.success() {
            return None;
        }
        let text = String::from_utf8(output.stdout).ok()?;
        let mut lines = text.lines();
        let root = PathBuf::from(lines.next()?).canonicalize().ok()?;
        let prefix = lines.next().unwrap_or("").to_string();
        Some(Repo { root, prefix })
    })
    .as_ref()
}

impl Repo {
    /// `file` (relative to the current directory, or absolute) relative to the root, when it
    /// lies inside the work tree.
    ///
    /// ```
    /// use manifest_verify::repo::Repo;
    ///
    /// let repo = Repo { root: "/r".into(), prefix: "examples/".into() };
    /// assert_eq!(repo.from_cwd("tools.manifest.json").as_deref(), Some("examples/tools.manifest.json"));
    /// assert_eq!(repo.from_cwd("../Cargo.toml").as_deref(), Some("Cargo.toml"));
    /// assert_eq!(repo.from_cwd("/r/a/b.json").as_deref(), Some("a/b.json"));
    /// assert_eq!(repo.from_cwd("../../elsewhere.json"), None);
    /// ```
    pub fn from_cwd(&self, file: &str) -> Option<String> {
        let path = Path::new(file);
        let joined = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(&self.prefix).join(path)
        };
        // An existing file is resolved through symbolic links, as the root was.
        let resolved = match joined.canonicalize() {
            Ok(real) => real,
            Err(_) => lexical(&joined)?,
        };
        let inside = resolved.strip_prefix(&self.root).ok()?.to_path_buf();
        inside.to_str().map(str::to_string)
    }

    /// The path of `REV:PATH` relative to the root: git reads `PATH` from the root, unless it
    /// starts with `./` or `../`, which git resolves from the current directory.
    ///
    /// ```
    /// use manifest_verify::repo::Repo;
    ///
    /// let repo = Repo { root: "/r".into(), prefix: "examples/".into() };
    /// assert_eq!(repo.from_rev_path("tools.manifest.json"), "tools.manifest.json");
    /// assert_eq!(repo.from_rev_path("./tools.manifest.json"), "examples/tools.manifest.json");
    /// ```
    pub fn from_rev_path(&self, path: &str) -> String {
        if path.starts_with("./") || path.starts_with("../") {
            self.from_cwd(path).unwrap_or_else(|| path.to_string())
        } else {
            path.to_string()
        }
    }

    /// A `source.file` written in a manifest, relative to the root.
    ///
    /// The macro writes it relative to the Cargo workspace root, which may lie below the
    /// repository root (a vendored workspace): the first of the manifest's directory and its
    /// ancestors under which the file exists in the work tree is taken. When none has it, the
    /// path is kept as written.
    pub fn source_file(&self, manifest: &str, file: &str) -> String {
        if Path::new(file).is_absolute() {
            return self.from_cwd(file).unwrap_or_else(|| file.to_string());
        }
        let mut dir = Path::new(manifest).parent();
        while let Some(d) = dir {
            let candidate = d.join(file);
            if self.root.join(&candidate).is_file() {
                if let Some(text) = candidate.to_str() {
                    return text.to_string();
                }
            }
            dir = d.parent();
        }
        file.to_string()
    }
}

/// `path` with `.` and `..` resolved lexically; `None` when `..` climbs above the root.
fn lexical(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}
