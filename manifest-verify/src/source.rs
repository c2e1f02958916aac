//! Reading a manifest argument: a file, or `REV:PATH` read from git.
//!
//! An argument that names an existing file is always that file, so a file whose name happens to
//! contain `:` still works; otherwise `REV:PATH` is read with `git show REV:PATH` in the current
//! directory, so `manifest-verify origin/main:tools.manifest.json tools.manifest.json` works in
//! CI with no extra step.

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
    /// The file path for locations (the `PATH` of `REV:PATH`, without a leading `./`).
    pub file: String,
    /// The manifest text.
    pub text: String,
    /// The parsed manifest.
    pub manifest: Manifest,
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
    if Path::new(arg).is_file() {
        let text = std::fs::read_to_string(arg)
            .map_err(|e| LoadError::plain(arg, format!("cannot read: {e}")))?;
        return Input::from_text(arg, arg, text);
    }
    match arg.split_once(':') {
        Some((rev, path)) if !rev.is_empty() && !path.is_empty() => {
            let text = git_show(arg, rev, path)?;
            Input::from_text(arg, path, text)
        }
        _ => Err(LoadError::plain(
            arg,
            "cannot read: no such file (to read a manifest from git, write REV:PATH, e.g. origin/main:tools.manifest.json)",
        )),
    }
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
                "not a file, and `git show {rev}:{path}` failed: {} (in CI, fetch the base revision, e.g. actions/checkout with fetch-depth: 0)",
                stderr.trim()
            ),
        ));
    }
    String::from_utf8(output.stdout)
        .map_err(|_| LoadError::plain(arg, "the manifest in git is not valid UTF-8"))
}
