//! The path gate (layer 1): judges every path in a call's arguments before the body runs.
//!
//! * Typed path arguments ([`crate::args::ReadPath`], [`crate::args::WritePath`], lists of them)
//!   are resolved (relative paths against the working directory, refused without one),
//!   normalized, judged by their access, and **rewritten** to the normalized path.
//! * Every other argument is walked (nested arrays and objects): each string — value or object
//!   key — that is an absolute path or a `file:` URL is judged as an access of unknown
//!   direction. A `file:` URL with a query, fragment or escapes has a second, verbatim reading
//!   ([`crate::path::verbatim_reading`]); both must be allowed, or it is denied as ambiguous.
//!   (Typed path arguments are rewritten to the one reading judged, so they are never
//!   ambiguous.)
//! * Write targets are judged against `fs.write`; reads and unknown accesses against
//!   `fs.read ∪ fs.write`. An unspecified list counts as empty once the gate is active.
//! * The gate is active only when the policy declares `fs.read` or `fs.write`.
//! * When the policy declares `net`, every string of the arguments (untyped ones, nested, and
//!   object keys) that names an `http`, `https`, `ws` or `wss` URL is judged against it by
//!   [`crate::net`]: `deny` refuses every URL, a host list requires `host:port` to match.
//!
//! ```
//! use policy_runtime::gate::check_args;
//! use policy_runtime::policy::ToolPolicy;
//! use policy_runtime::tool::{Access, PathArg};
//!
//! let policy = ToolPolicy::from_json_str("p", r#"{"fs": {"read": ["/data/**"], "write": ["/out/**"]}}"#)?;
//! let typed = [PathArg { name: "dest".into(), access: Access::Write }];
//!
//! let mut args = serde_json::json!({"dest": "/out/x/../r.md", "src": ["file:///data/a.csv"]});
//! check_args(&policy, &typed, &mut args, None).unwrap();
//! assert_eq!(args["dest"], "/out/r.md");
//!
//! let mut args = serde_json::json!({"dest": "/data/a.csv"}); // readable, not writable
//! let denial = check_args(&policy, &typed, &mut args, None).unwrap_err();
//! assert_eq!(denial.path.as_deref(), Some("/data/a.csv"));
//! # Ok::<(), policy_runtime::LoadError>(())
//! ```

use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt::{self, Write as _};
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::denial::{Denial, DenialCode};
use crate::glob::GlobList;
use crate::path::{looks_like_path, resolved, verbatim_reading};
use crate::policy::{NetPolicy, ToolPolicy};
use crate::protected::ProtectedPaths;
use crate::tool::{Access, PathArg};

/// A path the gate judged and allowed: what [`checked_paths`] lists, and a checked command's
/// path arguments ([`crate::command`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckedPath {
    /// JSON pointer of the argument (`/dest`, `/files/2`).
    pub argument: String,
    /// The normalized absolute path.
    pub path: String,
    /// How it was judged.
    pub access: Access,
}

/// Judges every path in `args` and rewrites typed path arguments to their normalized form.
///
/// Returns the first denial, and leaves `args` untouched on denial. This is the gate the
/// registry and `#[tool_policy]` run before every body. For plain paths already in normal form
/// it allocates nothing; it allocates to rewrite a typed argument that was not, to decode a
/// `file:` or network URL, and to explain a denial. [`checked_paths`] also lists what was
/// judged.
pub fn check_args(
    policy: &ToolPolicy,
    typed: &[PathArg],
    args: &mut Value,
    cwd: Option<&Path>,
) -> Result<(), Denial> {
    gate(policy, typed, args, cwd, &mut ())
}

/// [`check_args`], and the list of the paths it judged and allowed, for a reader (the
/// `policy-sandbox gate` command prints it): one entry per typed path and per path-like string
/// of the other arguments.
///
/// ```
/// use policy_runtime::gate::checked_paths;
/// use policy_runtime::policy::ToolPolicy;
/// use policy_runtime::tool::{Access, PathArg};
///
/// let policy = ToolPolicy::from_json_str("p", r#"{"fs": {"read": ["/data/**"], "write": ["/out/**"]}}"#)?;
/// let typed = [PathArg { name: "dest".into(), access: Access::Write }];
/// let mut args = serde_json::json!({"dest": "/out/x/../r.md", "src": ["file:///data/a.csv"]});
/// let checked = checked_paths(&policy, &typed, &mut args, None).unwrap();
/// assert_eq!((checked[0].argument.as_str(), checked[0].path.as_str()), ("/dest", "/out/r.md"));
/// assert_eq!((checked[1].argument.as_str(), checked[1].access), ("/src/0", Access::Unknown));
/// # Ok::<(), policy_runtime::LoadError>(())
/// ```
pub fn checked_paths(
    policy: &ToolPolicy,
    typed: &[PathArg],
    args: &mut Value,
    cwd: Option<&Path>,
) -> Result<Vec<CheckedPath>, Denial> {
    let mut list = Vec::new();
    gate(policy, typed, args, cwd, &mut list)?;
    Ok(list)
}

/// What the walk records of each allowed path: nothing for [`check_args`], the paths for
/// [`checked_paths`]. Generic, so the gate that runs before every body pays nothing for it.
trait Record {
    fn record(&mut self, at: &At<'_>, path: &str, access: Access);
}

impl Record for () {
    #[inline]
    fn record(&mut self, _: &At<'_>, _: &str, _: Access) {}
}

impl Record for Vec<CheckedPath> {
    fn record(&mut self, at: &At<'_>, path: &str, access: Access) {
        self.push(CheckedPath {
            argument: at.to_string(),
            path: path.to_string(),
            access,
        });
    }
}

/// Where a value sits in the call's arguments: its chain of parents, on the walk's stack. It
/// is written out as a JSON pointer (RFC 6901: `/files/2`, `/k~1~0` for the key `k/~`) only
/// for a denial or a listing, so walking the many arguments that are not paths allocates
/// nothing.
#[derive(Clone, Copy)]
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            At::Root => Ok(()),
            At::Key(parent, key) => {
                write!(f, "{parent}/")?;
                for c in key.chars() {
                    match c {
                        '~' => f.write_str("~0")?,
                        '/' => f.write_str("~1")?,
                        c => f.write_char(c)?,
                    }
                }
                Ok(())
            }
            At::Index(parent, index) => write!(f, "{parent}/{index}"),
        }
    }
}

/// A typed argument to rewrite once the whole call is allowed, and its normalized form.
type Rewrite<'a> = (&'a mut String, String);

fn gate(
    policy: &ToolPolicy,
    typed: &[PathArg],
    args: &mut Value,
    cwd: Option<&Path>,
    record: &mut impl Record,
) -> Result<(), Denial> {
    if !policy.gates_paths() && policy.net.is_none() {
        return Ok(());
    }
    let judge = Judge::new(policy);
    // Rewrites wait for the verdict on every argument: a denied call leaves `args` untouched.
    let mut rewrites: Vec<Rewrite<'_>> = Vec::new();
    match args {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                let at = At::Key(&At::Root, key);
                match typed.iter().find(|a| a.name == *key) {
                    Some(arg) => judge.typed(value, &at, arg.access, cwd, record, &mut rewrites)?,
                    None => {
                        judge.untyped_string(key, &at, record)?;
                        judge.untyped(value, &at, record)?
                    }
                }
            }
        }
        other => judge.untyped(other, &At::Root, record)?,
    }
    for (slot, normalized) in rewrites {
        *slot = normalized;
    }
    Ok(())
}

/// Judges a single path for `access`; the building block of [`check_args`].
///
/// ```
/// use policy_runtime::gate::check_path;
/// use policy_runtime::policy::ToolPolicy;
/// use policy_runtime::tool::Access;
///
/// let policy = ToolPolicy::from_json_str("p", r#"{"fs": {"write": ["/out/**"]}}"#)?;
/// assert!(check_path(&policy, "/out/../out/a", Access::Write, None).is_ok());
/// assert!(check_path(&policy, "/out/../etc/passwd", Access::Read, None).is_err());
/// # Ok::<(), policy_runtime::LoadError>(())
/// ```
pub fn check_path(
    policy: &ToolPolicy,
    raw: &str,
    access: Access,
    cwd: Option<&Path>,
) -> Result<String, Denial> {
    let normalized = resolved(raw, cwd).map_err(|p| invalid_path(&At::Root, raw, p))?;
    if policy.gates_paths() {
        Judge::new(policy).judge(&normalized, &At::Root, access)?;
    }
    Ok(normalized.into_owned())
}

struct Judge<'p> {
    paths: bool,
    read: Option<&'p GlobList>,
    write: Option<&'p GlobList>,
    /// Fetched on the first write judged: a call that only reads never takes the list's lock.
    protected: OnceCell<Arc<ProtectedPaths>>,
    net: Option<&'p NetPolicy>,
}

impl<'p> Judge<'p> {
    fn new(policy: &'p ToolPolicy) -> Judge<'p> {
        Judge {
            paths: policy.gates_paths(),
            read: policy.fs.read.as_ref(),
            write: policy.fs.write.as_ref(),
            protected: OnceCell::new(),
            net: policy.net.as_ref(),
        }
    }

    fn typed<'a>(
        &self,
        value: &'a mut Value,
        at: &At<'_>,
        access: Access,
        cwd: Option<&Path>,
        record: &mut impl Record,
        rewrites: &mut Vec<Rewrite<'a>>,
    ) -> Result<(), Denial> {
        if !self.paths {
            return Ok(());
        }
        match value {
            Value::String(raw) => {
                let normalized = resolved(raw, cwd).map_err(|p| invalid_path(at, raw, p))?;
                self.judge(&normalized, at, access)?;
                record.record(at, &normalized, access);
                if let Cow::Owned(normalized) = normalized {
                    if normalized != *raw {
                        rewrites.push((raw, normalized));
                    }
                }
                Ok(())
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.typed(item, &At::Index(at, i), access, cwd, record, rewrites)?;
                }
                Ok(())
            }
            // Null is an absent optional path; other shapes fail the body's own
            // deserialization, so they carry no path to judge.
            _ => Ok(()),
        }
    }

    fn untyped(&self, value: &Value, at: &At<'_>, record: &mut impl Record) -> Result<(), Denial> {
        match value {
            Value::String(s) => self.untyped_string(s, at, record),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.untyped(item, &At::Index(at, i), record)?;
                }
                Ok(())
            }
            Value::Object(map) => {
                for (k, v) in map {
                    let at = At::Key(at, k);
                    // A key is as much a path as a value: `{"files": {"/etc/cron.d/x": "..."}}`
                    // hands the body a path to write.
                    self.untyped_string(k, &at, record)?;
                    self.untyped(v, &at, record)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Judges a string of an untyped argument (a value or an object key) when it looks like a
    /// path or names a network URL. A `file:` URL that a body could also read verbatim (see
    /// [`crate::path::verbatim_reading`]) must be allowed under both readings.
    fn untyped_string(&self, s: &str, at: &At<'_>, record: &mut impl Record) -> Result<(), Denial> {
        if let Some(net) = self.net {
            crate::net::judge(net, s, at)?;
        }
        if !self.paths || !looks_like_path(s) {
            return Ok(());
        }
        let normalized = resolved(s, None).map_err(|p| invalid_path(at, s, p))?;
        self.judge(&normalized, at, Access::Unknown)?;
        if let Some(other) = verbatim_reading(s) {
            self.judge(&other, at, Access::Unknown)
                .map_err(|d| ambiguous(d, s, &normalized, &other))?;
        }
        record.record(at, &normalized, Access::Unknown);
        Ok(())
    }

    fn judge(&self, path: &str, at: &At<'_>, access: Access) -> Result<(), Denial> {
        // Each glob list is matched at most once, and only when the answer can still change
        // the decision: a readable path needs no write match unless it is written.
        let readable = || self.read.is_some_and(|r| r.is_match(path));
        let writable = || self.write.is_some_and(|w| w.is_match(path));
        let (allowed, may_write) = match access {
            Access::Write => (writable(), true),
            Access::Read => (readable() || writable(), false),
            // An access of unknown direction that only a write glob admits may be a write.
            Access::Unknown if readable() => (true, false),
            Access::Unknown => {
                let w = writable();
                (w, w)
            }
        };
        if allowed {
            // A protected path stays unwritable under any write glob.
            let protected = || {
                self.protected
                    .get_or_init(crate::protected::process_list)
                    .check_normalized(path)
            };
            if let Some(hit) = may_write.then(protected).flatten() {
                return Err(Denial::of_argument(
                    DenialCode::ProtectedPath,
                    at,
                    format!(
                        "{}. Write elsewhere under: {}.",
                        hit.explain(path),
                        list(self.write)
                    ),
                    Some(path.to_string()),
                ));
            }
            return Ok(());
        }
        let only_readable = access == Access::Write && self.read.is_some_and(|r| r.is_match(path));
        let reason = match access {
            Access::Write if only_readable => format!(
                "`{path}` is readable but not writable by this tool. It may write only under: {}.",
                list(self.write)
            ),
            Access::Write => format!(
                "writing `{path}` is outside this tool's fs.write globs. It may write only under: {}.",
                list(self.write)
            ),
            _ => format!(
                "`{path}` is outside this tool's fs globs. It may use only: {}.",
                list_union(self.read, self.write)
            ),
        };
        Err(Denial::of_argument(
            DenialCode::PathNotAllowed,
            at,
            reason,
            Some(path.to_string()),
        ))
    }
}

/// The denial of an ambiguous string: its verbatim reading is not allowed.
fn ambiguous(denied: Denial, raw: &str, as_url: &str, verbatim: &str) -> Denial {
    Denial {
        reason: format!(
            "`{}` is ambiguous: as a URL it names `{as_url}`, but read verbatim it names `{verbatim}`, and both readings must be allowed. {}",
            raw.escape_debug(),
            denied.reason
        ),
        ..denied
    }
}

fn list(globs: Option<&GlobList>) -> String {
    list_union(None, globs)
}

fn list_union(a: Option<&GlobList>, b: Option<&GlobList>) -> String {
    let all: Vec<&str> = a
        .into_iter()
        .chain(b)
        .flat_map(|l| l.globs().iter().map(|g| g.as_str()))
        .collect();
    if all.is_empty() {
        "nothing (no paths are allowed)".to_string()
    } else {
        all.join(", ")
    }
}

fn invalid_path(at: &At<'_>, raw: &str, problem: crate::path::PathProblem) -> Denial {
    let reason = format!("`{}`: {problem}.", raw.escape_debug());
    Denial::of_argument(DenialCode::InvalidPath, at, reason, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(json: &str) -> ToolPolicy {
        ToolPolicy::from_json_str("p", json).unwrap()
    }

    fn typed(name: &str, access: Access) -> Vec<PathArg> {
        vec![PathArg {
            name: name.into(),
            access,
        }]
    }

    #[test]
    fn unspecified_fs_does_nothing() {
        let p = policy("{}");
        let mut args = json!({"path": "/etc/shadow"});
        assert_eq!(checked_paths(&p, &[], &mut args, None).unwrap(), vec![]);
    }

    #[test]
    fn declared_empty_denies_every_path() {
        let p = policy(r#"{"fs": {"read": []}}"#);
        let mut args = json!({"note": "no paths here", "n": 3});
        assert!(check_args(&p, &[], &mut args, None).is_ok());
        let mut args = json!({"path": "/tmp/x"});
        let d = check_args(&p, &[], &mut args, None).unwrap_err();
        assert_eq!(d.code, DenialCode::PathNotAllowed);
        assert!(d.reason.contains("nothing"), "{}", d.reason);
    }

    #[test]
    fn write_argument_matching_only_read_glob_is_denied() {
        let p = policy(r#"{"fs": {"read": ["/data/**"], "write": ["/out/**"]}}"#);
        let mut args = json!({"dest": "/data/x"});
        let d = check_args(&p, &typed("dest", Access::Write), &mut args, None).unwrap_err();
        assert!(
            d.reason.contains("readable but not writable"),
            "{}",
            d.reason
        );
        assert_eq!(d.argument.as_deref(), Some("/dest"));
        // The same path as a read is fine, and write implies read.
        let mut args = json!({"src": "/data/x", "also": "/out/y"});
        assert!(check_args(&p, &typed("src", Access::Read), &mut args, None).is_ok());
    }

    #[test]
    fn nested_untyped_arguments_are_walked() {
        let p = policy(r#"{"fs": {"read": ["/data/**"]}}"#);
        let mut args = json!({"opts": {"inputs": [{"p": "/data/a"}, {"p": "/etc/passwd"}]}});
        let d = check_args(&p, &[], &mut args, None).unwrap_err();
        assert_eq!(d.argument.as_deref(), Some("/opts/inputs/1/p"));
        assert_eq!(d.path.as_deref(), Some("/etc/passwd"));
        let mut args = json!(["/data/a", {"k/~": "file:///data/../etc/passwd"}]);
        let d = check_args(&p, &[], &mut args, None).unwrap_err();
        assert_eq!(d.argument.as_deref(), Some("/1/k~1~0"));
    }

    #[test]
    fn file_urls_and_traversal() {
        let p = policy(r#"{"fs": {"write": ["/out/**"]}}"#);
        for bad in [
            "/out/../etc/passwd",
            "file:///out/%2e%2e/etc/passwd",
            "file:///etc/x",
            "/out/a/../../etc",
        ] {
            let mut args = json!({"x": bad});
            assert!(check_args(&p, &[], &mut args, None).is_err(), "{bad}");
        }
        let mut args = json!({"x": "file://localhost/out/a%20b"});
        let checked = checked_paths(&p, &[], &mut args, None).unwrap();
        assert_eq!(checked[0].path, "/out/a b");
        let mut args = json!({"x": "file://evil.example/out/a"});
        let d = check_args(&p, &[], &mut args, None).unwrap_err();
        assert_eq!(d.code, DenialCode::InvalidPath);
    }

    /// Issue 18 item 9: paths in object keys were never judged.
    #[test]
    fn object_keys_are_judged_like_values() {
        let p = policy(r#"{"fs": {"write": ["/srv/out/**"]}}"#);
        let mut args = json!({"files": {"/etc/cron.d/evil": "* * * * * root sh"}});
        let d = check_args(&p, &[], &mut args, None).unwrap_err();
        assert_eq!(d.code, DenialCode::PathNotAllowed);
        assert_eq!(d.path.as_deref(), Some("/etc/cron.d/evil"));
        assert_eq!(d.argument.as_deref(), Some("/files/~1etc~1cron.d~1evil"));
        let mut args = json!({"deep": [{"k": {"file:///etc/shadow": 1}}]});
        assert!(check_args(&p, &[], &mut args, None).is_err());
        // A top-level key that is not a declared parameter is walked too.
        let mut args = json!({"/etc/passwd": "x"});
        assert!(check_args(&p, &[], &mut args, None).is_err());
        let mut args = json!({"files": {"/srv/out/a.txt": "ok", "name": "/srv/out/b"}});
        let checked = checked_paths(&p, &[], &mut args, None).unwrap();
        assert_eq!(checked.len(), 2);
    }

    /// Issue 18 item 12: a `file:` URL whose URL reading and verbatim reading differ.
    #[test]
    fn both_readings_of_a_file_url_must_pass() {
        let p = policy(r#"{"fs": {"read": ["/srv/agent/data/**"]}}"#);
        for attack in [
            "file:///srv/agent/data#/../../../../etc/passwd",
            "file:///srv/agent/data?/../../../../etc/passwd",
            "file://localhost/srv/agent/data#/../../../../etc/passwd",
        ] {
            let mut args = json!({"src": attack});
            let d = check_args(&p, &[], &mut args, None).unwrap_err();
            assert_eq!(d.code, DenialCode::PathNotAllowed, "{attack}");
            assert!(d.reason.contains("ambiguous"), "{}", d.reason);
            assert!(d.reason.contains("/etc/passwd"), "{}", d.reason);
            assert_eq!(d.path.as_deref(), Some("/etc/passwd"));
        }
        // Harmless suffixes and escapes pass: both readings stay inside the glob.
        for fine in [
            "file:///srv/agent/data/a.csv#top",
            "file:///srv/agent/data/a%20b.csv",
            "file:///srv/agent/data/x?v=1",
        ] {
            let mut args = json!({"src": fine});
            assert!(check_args(&p, &[], &mut args, None).is_ok(), "{fine}");
        }
        // A typed argument is rewritten to the URL reading, the only one the body sees.
        let t = typed("src", Access::Read);
        let mut args = json!({"src": "file:///srv/agent/data/a.csv#/../../../../etc/passwd"});
        assert!(check_args(&p, &t, &mut args, None).is_ok());
        assert_eq!(args["src"], "/srv/agent/data/a.csv");
    }

    #[test]
    fn relative_typed_paths_need_a_cwd() {
        let p = policy(r#"{"fs": {"write": ["/srv/agent/out/**"]}}"#);
        let t = typed("dest", Access::Write);
        let mut args = json!({"dest": "out/r.md"});
        let d = check_args(&p, &t, &mut args, None).unwrap_err();
        assert_eq!(d.code, DenialCode::InvalidPath);
        assert!(d.reason.contains("relative"));
        let checked = checked_paths(&p, &t, &mut args, Some(Path::new("/srv/agent"))).unwrap();
        assert_eq!(checked[0].path, "/srv/agent/out/r.md");
        assert_eq!(args["dest"], "/srv/agent/out/r.md");
        let mut args = json!({"dest": "../etc/passwd"});
        assert!(check_args(&p, &t, &mut args, Some(Path::new("/srv/agent/out"))).is_err());
        // Relative strings in untyped arguments are not paths: they are not judged.
        let mut args = json!({"note": "out/r.md"});
        assert!(checked_paths(&p, &[], &mut args, None).unwrap().is_empty());
    }

    /// Rewrites wait for the verdict on the whole call: a typed path already judged and due
    /// for a rewrite stays as the caller wrote it when a later argument is denied.
    #[test]
    fn a_denied_call_rewrites_nothing() {
        let p = policy(r#"{"fs": {"read": ["/src/**"], "write": ["/out/**"]}}"#);
        let t = vec![
            PathArg {
                name: "a".into(),
                access: Access::Read,
            },
            PathArg {
                name: "b".into(),
                access: Access::Write,
            },
        ];
        let original = json!({"a": "/src/./x", "b": ["/out/y/../z", "/src/w"], "c": "/out/q"});
        let mut args = original.clone();
        let d = check_args(&p, &t, &mut args, None).unwrap_err();
        assert_eq!(d.argument.as_deref(), Some("/b/1"));
        assert_eq!(args, original);
        // Allowed, every typed path is rewritten, wherever it sits in a list.
        let mut args = json!({"a": "/src/./x", "b": ["/out/y/../z", "/out/w"], "c": "/out/q"});
        check_args(&p, &t, &mut args, None).unwrap();
        assert_eq!(
            args,
            json!({"a": "/src/x", "b": ["/out/z", "/out/w"], "c": "/out/q"})
        );
    }

    #[test]
    fn typed_lists_and_nul() {
        let p = policy(r#"{"fs": {"read": ["/src/**"]}}"#);
        let t = typed("files", Access::Read);
        let mut args = json!({"files": ["/src/a", "/src/./b", null]});
        let checked = checked_paths(&p, &t, &mut args, None).unwrap();
        assert_eq!(checked.len(), 2);
        assert_eq!(args["files"][1], "/src/b");
        let mut args = json!({"files": ["/src/a\u{0}/../../etc"]});
        let d = check_args(&p, &t, &mut args, None).unwrap_err();
        assert_eq!(d.code, DenialCode::InvalidPath);
        assert_eq!(
            args["files"][0], "/src/a\u{0}/../../etc",
            "untouched on denial"
        );
    }
}
