//! Protected paths: the agent's own state, which no tool may change even where a write glob
//! covers it.
//!
//! The default list ([`ProtectedPaths::defaults`]) holds, relative to a project root and a home
//! directory: the project's `.git/hooks` (a tree: a hook created new is as much a change as a
//! hook edited) and `.git/config`, the shell start-up files of the home ([`SHELL_RC_FILES`])
//! and `~/.ssh` (a tree). A runner adds its own files: the manifest, the audit log and the
//! policy files it loaded ([`ProtectedKind`]), and may add or remove any entry.
//!
//! [`ProtectedPaths::check`] is the one decision every consumer calls: the in-process gate
//! (writes to a protected path are denied with [`crate::DenialCode::ProtectedPath`]), the
//! methods of [`crate::WritePath`], the verifier's `tool.escalation` and the sandbox's plan. A
//! path is protected when it *is* an entry, lies *inside* a tree entry, or *holds* an entry
//! (an ancestor directory: renaming or removing `.git` moves `.git/hooks` away, and a new
//! `.git` could then be made). Paths are compared lexically, after normalization, as the gate
//! compares them.
//!
//! The list the gate uses is process-wide ([`set_process_list`]); until a program sets one it
//! is [`ProtectedPaths::defaults`] of the current directory and `$HOME`.
//!
//! ```
//! use std::path::Path;
//! use policy_runtime::protected::{ProtectedKind, ProtectedPaths, Relation};
//!
//! let mut list = ProtectedPaths::defaults(Path::new("/work/proj"), Path::new("/home/u"));
//! list.add_file("/work/proj/audit.jsonl", ProtectedKind::AuditLog)?;
//! assert_eq!(list.check("/work/proj/.git/hooks/pre-commit").unwrap().relation, Relation::Inside);
//! assert_eq!(list.check("/home/u/.bashrc").unwrap().relation, Relation::Is);
//! assert_eq!(list.check("/work/proj/.git").unwrap().relation, Relation::Holds);
//! assert!(list.check("/work/proj/src/main.rs").is_none());
//! assert!(list.check("/work/proj/audit.jsonl").is_some());
//! list.remove("/home/u/.bashrc");
//! assert!(list.check("/home/u/.bashrc").is_none());
//! # Ok::<(), policy_runtime::protected::ProtectedError>(())
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

/// The shell start-up files of a home directory that the default list protects: a line added
/// to any of them runs in every later shell of the user.
pub const SHELL_RC_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".config/fish/config.fish",
];

/// The default entries relative to a project root: `(relative path, kind, tree)`.
pub const PROJECT_DEFAULTS: &[(&str, ProtectedKind, bool)] = &[
    (".git/hooks", ProtectedKind::GitHooks, true),
    (".git/config", ProtectedKind::GitConfig, false),
];

/// The default entries relative to a home directory: each of [`SHELL_RC_FILES`], and `.ssh`
/// (a tree).
pub fn home_defaults() -> impl Iterator<Item = (&'static str, ProtectedKind, bool)> {
    SHELL_RC_FILES
        .iter()
        .map(|rc| (*rc, ProtectedKind::ShellRc, false))
        .chain([(".ssh", ProtectedKind::Ssh, true)])
}

/// The home directories a reviewer assumes, knowing no user's `$HOME`: `/root`, `/home/*`,
/// `/Users/*`, `/var/home/*` (as a regex fragment).
pub const HOME_DIRS_REGEX: &str = r"(?:/root|/home/[^/]+|/Users/[^/]+|/var/home/[^/]+)";

/// The default list as the verifier sees it, for every project and every usual home at once:
/// per kind, one anchored regex over normalized absolute paths matching each default entry
/// (and everything inside a tree entry) under any project root ([`PROJECT_DEFAULTS`]) or any
/// home of [`HOME_DIRS_REGEX`] ([`home_defaults`]). `manifest-verify`'s `tool.escalation` reports
/// a write grant that reaches one.
///
/// ```
/// use policy_runtime::protected::{default_patterns, ProtectedKind};
/// let patterns = default_patterns();
/// let hooks = &patterns.iter().find(|(k, _)| *k == ProtectedKind::GitHooks).unwrap().1;
/// let re = regex::Regex::new(hooks).unwrap();
/// assert!(re.is_match("/srv/any/repo/.git/hooks/pre-commit"));
/// assert!(!re.is_match("/srv/repo/.git/index"));
/// ```
pub fn default_patterns() -> Vec<(ProtectedKind, String)> {
    let tail = |rel: &str, tree: bool| {
        format!(
            "{}{}",
            regex_syntax::escape(rel),
            if tree { "(?:/[^/]+)*" } else { "" }
        )
    };
    let mut out: Vec<(ProtectedKind, Vec<String>)> = Vec::new();
    let mut add =
        |kind: ProtectedKind, alternative: String| match out.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, alts)) => alts.push(alternative),
            None => out.push((kind, vec![alternative])),
        };
    for (rel, kind, tree) in PROJECT_DEFAULTS {
        add(*kind, format!("(?:/[^/]+)*/{}", tail(rel, *tree)));
    }
    for (rel, kind, tree) in home_defaults() {
        add(kind, format!("{HOME_DIRS_REGEX}/{}", tail(rel, tree)));
    }
    out.into_iter()
        .map(|(kind, alts)| (kind, format!("^(?:{})$", alts.join("|"))))
        .collect()
}

/// What a protected path is, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtectedKind {
    /// The tool manifest the agent runs under.
    Manifest,
    /// The audit log the agent writes.
    AuditLog,
    /// A policy file the runner loaded.
    PolicyFile,
    /// The repository's hooks (`.git/hooks`), run by git on the user's behalf.
    GitHooks,
    /// The repository's configuration (`.git/config`: `core.hooksPath`, `core.sshCommand`, ...).
    GitConfig,
    /// A shell start-up file ([`SHELL_RC_FILES`]).
    ShellRc,
    /// The user's SSH keys and configuration (`~/.ssh`).
    Ssh,
    /// Added by the runner for its own reasons.
    Other,
}

impl ProtectedKind {
    /// The snake_case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtectedKind::Manifest => "manifest",
            ProtectedKind::AuditLog => "audit_log",
            ProtectedKind::PolicyFile => "policy_file",
            ProtectedKind::GitHooks => "git_hooks",
            ProtectedKind::GitConfig => "git_config",
            ProtectedKind::ShellRc => "shell_rc",
            ProtectedKind::Ssh => "ssh",
            ProtectedKind::Other => "other",
        }
    }
}

impl fmt::Display for ProtectedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One protected path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedPath {
    /// The normalized absolute path.
    pub path: PathBuf,
    /// What it is.
    pub kind: ProtectedKind,
    /// A directory whose whole tree is protected (`false`: the path alone).
    pub tree: bool,
}

/// How a path relates to the protected entry that protects it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// The path is the protected path.
    Is,
    /// The path lies inside a protected tree.
    Inside,
    /// The path is a directory holding the protected path: renaming or removing it would move
    /// the protected path away.
    Holds,
}

/// The answer of [`ProtectedPaths::check`]: which entry protects the path, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protection<'a> {
    /// The protected entry.
    pub entry: &'a ProtectedPath,
    /// How the path relates to it.
    pub relation: Relation,
}

impl Protection<'_> {
    /// A sentence for the model and the audit log.
    pub fn explain(&self, path: &str) -> String {
        let what = describe(self.entry);
        match self.relation {
            Relation::Is => format!("`{path}` is {what}, which no tool may change"),
            Relation::Inside => format!("`{path}` is inside {what}, which no tool may change"),
            Relation::Holds => format!(
                "`{path}` holds {what}: renaming or removing it would move the protected path, which no tool may change"
            ),
        }
    }
}

fn describe(entry: &ProtectedPath) -> String {
    let kind = match entry.kind {
        ProtectedKind::Manifest => "the agent's tool manifest",
        ProtectedKind::AuditLog => "the agent's audit log",
        ProtectedKind::PolicyFile => "a policy file the runner loaded",
        ProtectedKind::GitHooks => "the repository's hooks",
        ProtectedKind::GitConfig => "the repository's git configuration",
        ProtectedKind::ShellRc => "a shell start-up file",
        ProtectedKind::Ssh => "the user's SSH directory",
        ProtectedKind::Other => "a protected path",
    };
    format!("{kind} `{}`", entry.path.display())
}

/// A path that cannot be protected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtectedError {
    /// Protected paths are absolute.
    #[error("protected path `{0}` is not absolute: write it from the root (`/...`)")]
    NotAbsolute(String),
    /// `/` cannot be protected: every write would be refused.
    #[error("`/` cannot be protected: it would refuse every write; name the files or directories to protect")]
    Root,
}

/// A list of protected paths (see the [module](self)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedPaths {
    entries: Vec<ProtectedPath>,
}

impl ProtectedPaths {
    /// An empty list: nothing is protected.
    pub fn none() -> ProtectedPaths {
        ProtectedPaths::default()
    }

    /// The default list for a project root and a home directory: `PROJECT/.git/hooks` (tree),
    /// `PROJECT/.git/config`, `HOME/<each of SHELL_RC_FILES>` and `HOME/.ssh` (tree). Relative
    /// roots are taken as they are joined to `/`.
    pub fn defaults(project: &Path, home: &Path) -> ProtectedPaths {
        let project = normalized(project);
        let home = normalized(home);
        let mut list = ProtectedPaths::none();
        let mut push = |path: PathBuf, kind, tree| {
            if path != Path::new("/") && !list.entries.iter().any(|e| e.path == path) {
                list.entries.push(ProtectedPath { path, kind, tree });
            }
        };
        for (rel, kind, tree) in PROJECT_DEFAULTS {
            push(project.join(rel), *kind, *tree);
        }
        for (rel, kind, tree) in home_defaults() {
            push(home.join(rel), kind, tree);
        }
        list
    }

    /// [`ProtectedPaths::defaults`] of the current directory and `$HOME` (the defaults without
    /// a home when `$HOME` is unset or relative).
    pub fn for_this_process() -> ProtectedPaths {
        let project = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute());
        let mut list = ProtectedPaths::defaults(&project, home.as_deref().unwrap_or(&project));
        if home.is_none() {
            list.entries
                .retain(|e| !matches!(e.kind, ProtectedKind::ShellRc | ProtectedKind::Ssh));
        }
        list
    }

    /// Protects one path (a file, or a directory as a name only).
    ///
    /// # Errors
    ///
    /// The path is relative, or is `/`.
    pub fn add_file(
        &mut self,
        path: impl AsRef<Path>,
        kind: ProtectedKind,
    ) -> Result<&mut Self, ProtectedError> {
        self.add(path.as_ref(), kind, false)
    }

    /// Protects a directory and everything inside it.
    ///
    /// # Errors
    ///
    /// The path is relative, or is `/`.
    pub fn add_tree(
        &mut self,
        path: impl AsRef<Path>,
        kind: ProtectedKind,
    ) -> Result<&mut Self, ProtectedError> {
        self.add(path.as_ref(), kind, true)
    }

    fn add(
        &mut self,
        path: &Path,
        kind: ProtectedKind,
        tree: bool,
    ) -> Result<&mut Self, ProtectedError> {
        if !path.is_absolute() {
            return Err(ProtectedError::NotAbsolute(path.display().to_string()));
        }
        let path = normalized(path);
        if path == Path::new("/") {
            return Err(ProtectedError::Root);
        }
        match self.entries.iter_mut().find(|e| e.path == path) {
            Some(e) => {
                e.tree |= tree;
                e.kind = kind;
            }
            None => self.entries.push(ProtectedPath { path, kind, tree }),
        }
        Ok(self)
    }

    /// Stops protecting `path` (exactly this entry); whether it was listed.
    pub fn remove(&mut self, path: impl AsRef<Path>) -> bool {
        let path = normalized(path.as_ref());
        let before = self.entries.len();
        self.entries.retain(|e| e.path != path);
        self.entries.len() != before
    }

    /// The entries, in the order they were added.
    pub fn entries(&self) -> &[ProtectedPath] {
        &self.entries
    }

    /// Whether nothing is protected.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether writing to (creating, changing, renaming or removing) `path` would change a
    /// protected path, and which; `None` when it would not. `path` is normalized first
    /// (lexically: `..` and `.` are folded, symlinks are not followed).
    pub fn check(&self, path: impl AsRef<Path>) -> Option<Protection<'_>> {
        let path = path.as_ref().to_string_lossy();
        self.check_normalized(&crate::path::normalized(&path))
    }

    /// [`ProtectedPaths::check`] of a path already in normal form: the gate's call, on every
    /// path it admits for writing.
    pub(crate) fn check_normalized(&self, path: &str) -> Option<Protection<'_>> {
        let path = path.as_bytes();
        // Entries and `path` are normalized (absolute, no `.`, `..`, empty or trailing
        // component), so a component-wise prefix is a byte prefix followed by a separator.
        // The separator byte is tested first: it turns most entries away without a compare.
        // The root holds every entry; no entry is the root.
        let under = |inner: &[u8], outer: &[u8]| {
            outer == b"/"
                || (inner.len() > outer.len()
                    && inner[outer.len()] == b'/'
                    && inner.starts_with(outer))
        };
        // The most direct relation wins: an exact entry, then a tree, then an ancestor, each
        // the first in the list.
        let mut best: Option<Protection<'_>> = None;
        for entry in &self.entries {
            let e = entry.path.as_os_str().as_encoded_bytes();
            let relation = if e == path {
                Relation::Is
            } else if entry.tree && under(path, e) {
                Relation::Inside
            } else if under(e, path) {
                Relation::Holds
            } else {
                continue;
            };
            if relation == Relation::Is {
                return Some(Protection { entry, relation });
            }
            if best
                .as_ref()
                .is_none_or(|b| rank(relation) < rank(b.relation))
            {
                best = Some(Protection { entry, relation });
            }
        }
        best
    }

    /// The entries inside (or equal to) the directory `root`: those a write root there covers.
    pub fn inside<'a>(&'a self, root: &'a Path) -> impl Iterator<Item = &'a ProtectedPath> + 'a {
        self.entries
            .iter()
            .filter(move |e| e.path.starts_with(root))
    }
}

/// How direct a relation is, for [`ProtectedPaths::check`]: lower wins.
fn rank(relation: Relation) -> u8 {
    match relation {
        Relation::Is => 0,
        Relation::Inside => 1,
        Relation::Holds => 2,
    }
}

fn normalized(path: &Path) -> PathBuf {
    PathBuf::from(crate::path::normalize(&path.to_string_lossy()))
}

fn process_slot() -> &'static RwLock<Option<Arc<ProtectedPaths>>> {
    static SLOT: RwLock<Option<Arc<ProtectedPaths>>> = RwLock::new(None);
    &SLOT
}

/// Sets the list the gate and the [`crate::WritePath`] methods of this process use.
pub fn set_process_list(list: ProtectedPaths) {
    *process_slot().write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(list));
}

/// The list the gate uses: the one [`set_process_list`] set, or
/// [`ProtectedPaths::for_this_process`] (computed once).
pub fn process_list() -> Arc<ProtectedPaths> {
    if let Some(list) = &*process_slot().read().unwrap_or_else(|e| e.into_inner()) {
        return list.clone();
    }
    let mut slot = process_slot().write().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert_with(|| Arc::new(ProtectedPaths::for_this_process()))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> ProtectedPaths {
        ProtectedPaths::defaults(Path::new("/p"), Path::new("/h"))
    }

    #[test]
    fn defaults_hold_the_issue_list() {
        let l = list();
        for (path, kind) in [
            ("/p/.git/hooks", ProtectedKind::GitHooks),
            ("/p/.git/config", ProtectedKind::GitConfig),
            ("/h/.bashrc", ProtectedKind::ShellRc),
            ("/h/.profile", ProtectedKind::ShellRc),
            ("/h/.zshrc", ProtectedKind::ShellRc),
            ("/h/.ssh", ProtectedKind::Ssh),
        ] {
            let hit = l.check(path).unwrap_or_else(|| panic!("{path}"));
            assert_eq!(
                (hit.relation, hit.entry.kind),
                (Relation::Is, kind),
                "{path}"
            );
        }
    }

    /// `check` compares bytes: a name that only starts like an entry is neither inside it nor
    /// its ancestor, while the root and every real ancestor hold it.
    #[test]
    fn prefixes_count_only_at_component_boundaries() {
        let l = list();
        // `/p/.git/config` is a file entry, not a tree: `config/x` is not inside it.
        let outside = [
            "/h/.sshx/key",
            "/h/.ss",
            "/p/.git/hooksx",
            "/p/.gi",
            "/hx",
            "/p/.git/configx",
            "/p/.git/config/x",
        ];
        for path in outside {
            assert!(l.check(path).is_none(), "{path}: {:?}", l.check(path));
        }
        for (path, relation) in [
            ("/", Relation::Holds),
            ("/h", Relation::Holds),
            ("/p/.git", Relation::Holds),
            ("/h/.ssh/a/b", Relation::Inside),
            ("/h/./.ssh/../.ssh", Relation::Is),
        ] {
            assert_eq!(l.check(path).map(|h| h.relation), Some(relation), "{path}");
        }
    }

    #[test]
    fn new_files_in_protected_trees_and_ancestors_are_protected() {
        let l = list();
        assert_eq!(
            l.check("/p/.git/hooks/pre-commit").unwrap().relation,
            Relation::Inside
        );
        assert_eq!(
            l.check("/h/.ssh/authorized_keys").unwrap().relation,
            Relation::Inside
        );
        assert_eq!(l.check("/p/.git").unwrap().relation, Relation::Holds);
        assert_eq!(l.check("/p").unwrap().relation, Relation::Holds);
        assert_eq!(
            l.check("/h/.config/fish").unwrap().relation,
            Relation::Holds
        );
        // A file entry is no tree: a sibling name beside it is free.
        assert!(l.check("/p/.git/config.lock").is_none());
        assert!(l.check("/p/.git/index").is_none());
        assert!(l.check("/p/src/lib.rs").is_none());
        assert!(l.check("/h/.bashrc_old").is_none());
    }

    #[test]
    fn paths_are_compared_after_normalization() {
        let l = list();
        assert!(l.check("/p/src/../.git/./hooks/x").is_some());
        assert!(l.check("/h//.bashrc").is_some());
    }

    #[test]
    fn the_runner_adds_and_removes_entries() {
        let mut l = list();
        l.add_file("/out/audit.jsonl", ProtectedKind::AuditLog)
            .unwrap();
        l.add_tree("/etc/agent", ProtectedKind::PolicyFile).unwrap();
        assert_eq!(
            l.check("/out/audit.jsonl").unwrap().entry.kind,
            ProtectedKind::AuditLog
        );
        assert!(l.check("/etc/agent/x.toml").is_some());
        assert!(l.remove("/h/.ssh"));
        assert!(!l.remove("/h/.ssh"));
        assert!(l.check("/h/.ssh/id_rsa").is_none());
        assert_eq!(
            l.add_file("rel/x", ProtectedKind::Other).unwrap_err(),
            ProtectedError::NotAbsolute("rel/x".into())
        );
        assert_eq!(
            l.add_tree("/", ProtectedKind::Other).unwrap_err(),
            ProtectedError::Root
        );
    }

    #[test]
    fn inside_lists_the_entries_a_write_root_covers() {
        let l = list();
        let under_p: Vec<&Path> = l
            .inside(Path::new("/p"))
            .map(|e| e.path.as_path())
            .collect();
        assert_eq!(
            under_p,
            [Path::new("/p/.git/hooks"), Path::new("/p/.git/config")]
        );
    }

    #[test]
    fn explanations_name_the_entry() {
        let l = list();
        let text = l.check("/p/.git").unwrap().explain("/p/.git");
        assert!(text.contains("/p/.git/hooks"), "{text}");
    }
}
