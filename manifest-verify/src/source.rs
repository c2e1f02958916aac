//! Reading a manifest argument: a file, or `REV:PATH` read from git.
//!
//! An argument that names an existing file is always that file, so a file whose name happens to
//! contain `:` still works; otherwise `REV:PATH` is read with `git show REV:PATH` in the current
//! directory, so `manifest-verify origin/main:tools.manifest.json tools.manifest.json` works in
//! CI with no extra step.
//!
//! The base (old) side may be absent at an existing revision: a manifest that is new in the pull
//! request. [`load_base`] then compares against an empty manifest, so every tool is reported as
//! `tool.added`, and says so in [`Input::notice`]. A revision that is not in the clone is an
//! error either way, with the advice to fetch it.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use policy_runtime::error::LoadError;
use policy_runtime::manifest::Manifest;

use crate::locate::KeySpans;

/// A loaded manifest with the text it came from, for locating findings.
#[derive(Debug)]
pub struct Input {
    /// The argument as given (`tools.manifest.json`, `origin/main:tools.manifest.json`).
    pub name: String,
    /// The file path for locations: relative to the repository root inside a git work tree
    /// (see [`crate::repo`]), otherwise as given without a leading `./`.
    pub file: String,
    /// The manifest text.
    pub text: String,
    /// The parsed manifest.
    pub manifest: Manifest,
    /// Something the reader must know about this input, e.g. that it was absent at the base
    /// revision and stands for an empty manifest.
    pub notice: Option<String>,
    spans: OnceLock<KeySpans>,
}

impl Input {
    /// Parses `text`; `name` is used in error messages and `file` in locations.
    pub fn from_text(name: &str, file: &str, text: String) -> Result<Input, LoadError> {
        let manifest = Manifest::from_json_str(name, &text)?;
        Ok(Input {
            name: name.to_string(),
            file: file.trim_start_matches("./").to_string(),
            text,
            manifest,
            notice: None,
            spans: OnceLock::new(),
        })
    }

    /// Key spans of the text (computed on first use).
    pub fn spans(&self) -> &KeySpans {
        self.spans.get_or_init(|| KeySpans::scan(&self.text, 5))
    }
}

/// Reads and parses a manifest argument (a file path, or `REV:PATH` from git).
///
/// Errors name the argument and, for invalid JSON or an invalid policy, the line and column.
pub fn load(arg: &str) -> Result<Input, LoadError> {
    load_side(arg, false)
}

/// [`load`] for the base (old) side: a `REV:PATH` whose revision exists but has no `PATH` is an
/// empty manifest, with a [`Input::notice`] saying so.
pub fn load_base(arg: &str) -> Result<Input, LoadError> {
    load_side(arg, true)
}

/// The file an argument stands for in locations: relative to the repository root inside a git
/// work tree (the `PATH` of `REV:PATH` as git reads it), otherwise as given.
pub fn location_file(arg: &str) -> String {
    let repo = crate::repo::current();
    if Path::new(arg).is_file() {
        return repo
            .and_then(|r| r.from_cwd(arg))
            .unwrap_or_else(|| arg.to_string());
    }
    match arg.split_once(':') {
        Some((rev, path)) if !rev.is_empty() && !path.is_empty() => {
            repo.map_or_else(|| path.to_string(), |r| r.from_rev_path(path))
        }
        _ => repo
            .and_then(|r| r.from_cwd(arg))
            .unwrap_or_else(|| arg.to_string()),
    }
}

fn load_side(arg: &str, base: bool) -> Result<Input, LoadError> {
    let file = location_file(arg);
    if Path::new(arg).is_file() {
        let text = std::fs::read_to_string(arg)
            .map_err(|e| LoadError::plain(arg, format!("cannot read: {e}")))?;
        return Input::from_text(arg, &file, text);
    }
    match arg.split_once(':') {
        Some((rev, path)) if !rev.is_empty() && !path.is_empty() => {
            match git_show(arg, rev, path) {
                Ok(text) => Input::from_text(arg, &file, text),
                Err(_) if base && revision_exists(rev) => {
                    let mut input = Input::from_text(arg, &file, EMPTY.to_string())?;
                    input.notice = Some(format!(
                        "`{path}` does not exist at `{rev}`: the manifest is new, so it is compared with an empty manifest and every tool is reported as tool.added"
                    ));
                    Ok(input)
                }
                Err(e) if revision_exists(rev) => Err(LoadError::plain(
                    arg,
                    format!("`{path}` does not exist at `{rev}` ({})", e.message()),
                )),
                Err(e) => Err(LoadError::plain(
                    arg,
                    format!(
                        "the revision `{rev}` is not in this clone ({}); fetch it (in CI, actions/checkout with fetch-depth: 0)",
                        e.message()
                    ),
                )),
            }
        }
        _ => Err(LoadError::plain(
            arg,
            "cannot read: no such file (to read a manifest from git, write REV:PATH, e.g. origin/main:tools.manifest.json)",
        )),
    }
}

/// The manifest an absent base stands for.
const EMPTY: &str = "{\"manifest_version\": 1, \"tools\": {}}\n";

/// Whether `rev` names a commit in this repository.
fn revision_exists(rev: &str) -> bool {
    Command::new("git")
        .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("{rev}^{{commit}}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

fn git_show(arg: &str, rev: &str, path: &str) -> Result<String, LoadError> {
    // `--end-of-options`: a revision that starts with `-` (`--output=/tmp/x:y`) is a revision
    // to git, never an option that makes it write a file.
    let output = Command::new("git")
        .args(["show", "--end-of-options", &format!("{rev}:{path}")])
        .output()
        .map_err(|e| LoadError::plain(arg, format!("cannot run `git show` to read it: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(LoadError::plain(
            arg,
            format!(
                "not a file, and `git show {rev}:{path}` failed: {}",
                stderr.trim().trim_end_matches('.')
            ),
        ));
    }
    String::from_utf8(output.stdout)
        .map_err(|_| LoadError::plain(arg, "the manifest in git is not valid UTF-8"))
}
