//! Lexical path normalization and the `file://` URL form of path arguments.
//!
//! Normalization never touches the filesystem: `/out/../etc/passwd` is `/etc/passwd` whether or
//! not `/out` exists, so `..` can never carry a path out of a glob. (Symlinks are not judged
//! here: the gate judges names; the file methods of `ReadPath`/`WritePath` resolve them beneath
//! the admitting glob's folder, and the OS sandbox confines subprocesses.)
//!
//! ```
//! use policy_runtime::path::normalize;
//! assert_eq!(normalize("/out/../etc//passwd/."), "/etc/passwd");
//! assert_eq!(normalize("/../.."), "/");
//! ```

use std::borrow::Cow;
use std::path::Path;

/// Lexically normalizes an absolute path: removes `.`, empty components and trailing `/`, and
/// resolves `..` against the preceding component (`..` at the root stays at the root).
pub fn normalize(path: &str) -> String {
    normalized(path).into_owned()
}

/// [`normalize`], borrowing `path` when it is already in normal form (most arguments are): the
/// gate judges those without allocating.
pub(crate) fn normalized(path: &str) -> Cow<'_, str> {
    if is_normal(path) {
        return Cow::Borrowed(path);
    }
    if !path.starts_with('/') {
        // Not a path the gate judges; kept as the general cleaner reads it.
        let cleaned = path_clean::clean(path);
        return Cow::Owned(match cleaned.into_os_string().into_string() {
            Ok(s) => s,
            // path-clean only removes components, so valid UTF-8 in means valid UTF-8 out.
            Err(_) => unreachable!("normalizing UTF-8 yields UTF-8"),
        });
    }
    // Components are cut at `/` by hand, not with `str::split`: this runs on every
    // non-normal path argument the gate judges, and a byte scan is several times faster.
    let mut out = String::with_capacity(path.len());
    let mut rest = &path[1..];
    loop {
        let (component, next) = match rest.bytes().position(|b| b == b'/') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        match component.as_bytes() {
            b"" | b"." => {}
            b".." => {
                let parent = out.rfind('/').unwrap_or(0);
                out.truncate(parent);
            }
            _ => {
                out.push('/');
                out.push_str(component);
            }
        }
        match next {
            Some(next) => rest = next,
            None => break,
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Cow::Owned(out)
}

/// Whether an absolute path is already in normal form: the root, or `/`-separated components
/// none of which is empty, `.` or `..`.
fn is_normal(path: &str) -> bool {
    let bytes = path.as_bytes();
    if bytes == b"/" {
        return true;
    }
    let Some(rest) = bytes.strip_prefix(b"/") else {
        return false;
    };
    // One pass, counting each component's bytes and dots: a component is empty, `.` or `..`
    // exactly when it is all dots and at most two bytes long.
    let (mut len, mut dots) = (0usize, 0usize);
    for &b in rest {
        if b == b'/' {
            if len == dots && len <= 2 {
                return false;
            }
            (len, dots) = (0, 0);
        } else {
            len += 1;
            dots += usize::from(b == b'.');
        }
    }
    !(len == dots && len <= 2)
}

/// Why a path argument could not be turned into a normalized absolute path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathProblem {
    /// A relative path and no working directory to resolve it against.
    Relative,
    /// The path contains NUL.
    Nul,
    /// A `file://` URL that names another host, or whose escapes are not valid UTF-8.
    BadFileUrl,
    /// The path is not valid UTF-8 (from an OS path).
    NotUtf8,
}

impl std::fmt::Display for PathProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PathProblem::Relative => {
                "relative path with no working directory set; pass an absolute path"
            }
            PathProblem::Nul => "the path contains a NUL byte",
            PathProblem::BadFileUrl => "file:// URL with a remote host or invalid escapes",
            PathProblem::NotUtf8 => "the path is not valid UTF-8",
        })
    }
}

/// Resolves a path argument to a normalized absolute path: `file://` URLs are decoded, relative
/// paths are joined to `cwd` (and refused without one).
///
/// ```
/// use std::path::Path;
/// use policy_runtime::path::{resolve, PathProblem};
///
/// assert_eq!(resolve("file:///out/a%20b.txt", None).unwrap(), "/out/a b.txt");
/// assert_eq!(resolve("x/../y", Some(Path::new("/srv/agent"))).unwrap(), "/srv/agent/y");
/// assert_eq!(resolve("x", None), Err(PathProblem::Relative));
/// ```
pub fn resolve(arg: &str, cwd: Option<&Path>) -> Result<String, PathProblem> {
    resolved(arg, cwd).map(Cow::into_owned)
}

/// [`resolve`], borrowing `arg` when it already is a normalized absolute path.
pub(crate) fn resolved<'a>(arg: &'a str, cwd: Option<&Path>) -> Result<Cow<'a, str>, PathProblem> {
    let raw = match file_url_path(arg) {
        Some(result) => {
            let decoded = result?;
            if decoded.contains('\0') {
                return Err(PathProblem::Nul);
            }
            return Ok(Cow::Owned(normalized(&decoded).into_owned()));
        }
        None => arg,
    };
    if raw.contains('\0') {
        return Err(PathProblem::Nul);
    }
    if raw.starts_with('/') {
        return Ok(normalized(raw));
    }
    let cwd = cwd.ok_or(PathProblem::Relative)?;
    let cwd = cwd.to_str().ok_or(PathProblem::NotUtf8)?;
    if !cwd.starts_with('/') {
        return Err(PathProblem::Relative);
    }
    Ok(Cow::Owned(normalize(&format!("{cwd}/{raw}"))))
}

/// The other way a `file:` URL can be read as a path: by a body that strips `file://` (and a
/// `localhost` authority) and opens the rest verbatim, with no percent-decoding and with any
/// `?query` or `#fragment` still attached. `None` when `arg` is not a file URL or both readings
/// agree.
///
/// `file:///srv/data#/../../etc/passwd` is `/srv/data` to a URL parser but `/etc/passwd` to
/// such a body, so the gate judges both readings of an untyped argument.
///
/// ```
/// use policy_runtime::path::verbatim_reading;
/// assert_eq!(verbatim_reading("file:///srv/data#/../../etc/passwd").as_deref(), Some("/etc/passwd"));
/// assert_eq!(verbatim_reading("file:///out/a%2e%2e").as_deref(), Some("/out/a%2e%2e"));
/// assert_eq!(verbatim_reading("file:///out/a"), None);
/// assert_eq!(verbatim_reading("/out/a?b"), None);
/// ```
pub fn verbatim_reading(arg: &str) -> Option<String> {
    let url_reading = file_url_path(arg)?.ok();
    let rest = &arg[5..];
    let verbatim = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let slash = authority_and_path.find('/')?;
            &authority_and_path[slash..]
        }
        None => rest,
    };
    if !verbatim.starts_with('/') || verbatim.contains('\0') {
        return None;
    }
    let verbatim = normalize(verbatim);
    (url_reading.map(|u| normalize(&u)) != Some(verbatim.clone())).then_some(verbatim)
}

/// Whether a string is a candidate path in an untyped argument: absolute, or a `file:` URL.
pub fn looks_like_path(s: &str) -> bool {
    s.starts_with('/') || s.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("file:"))
}

/// The path of a `file:` URL, percent-decoded; `None` when `s` is not a file URL.
fn file_url_path(s: &str) -> Option<Result<String, PathProblem>> {
    if !s.get(..5)?.eq_ignore_ascii_case("file:") {
        return None;
    }
    let rest = &s[5..];
    let path = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let slash = authority_and_path
                .find('/')
                .unwrap_or(authority_and_path.len());
            let host = &authority_and_path[..slash];
            if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
                return Some(Err(PathProblem::BadFileUrl));
            }
            &authority_and_path[slash..]
        }
        None => rest,
    };
    let path = path.split(['?', '#']).next().unwrap_or("");
    if !path.starts_with('/') {
        return Some(Err(PathProblem::BadFileUrl));
    }
    Some(percent_decode(path))
}

fn percent_decode(s: &str) -> Result<String, PathProblem> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or(PathProblem::BadFileUrl)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| PathProblem::BadFileUrl)?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| PathProblem::BadFileUrl)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The obvious normalizer, to check the hand-cut one against.
    fn reference(path: &str) -> String {
        let mut parts: Vec<&str> = Vec::new();
        for c in path.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                c => parts.push(c),
            }
        }
        format!("/{}", parts.join("/"))
    }

    /// Every absolute path of up to 8 bytes over `/`, `.`, `a` and a two-byte character.
    #[test]
    fn normalization_agrees_with_the_obvious_one_on_every_short_path() {
        let alphabet = ["/", ".", "a", "é"];
        let mut paths = vec!["/".to_string()];
        let mut frontier = paths.clone();
        for _ in 0..7 {
            frontier = frontier
                .iter()
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            paths.extend(frontier.iter().cloned());
        }
        for p in &paths {
            let n = normalized(p);
            assert_eq!(n, reference(p), "{p:?}");
            assert_eq!(is_normal(p), n == p.as_str(), "{p:?}");
            assert_eq!(matches!(n, Cow::Borrowed(_)), is_normal(p), "{p:?}");
        }
    }

    #[test]
    fn file_urls() {
        assert_eq!(resolve("file://localhost/etc/x", None).unwrap(), "/etc/x");
        assert_eq!(resolve("FILE:///a/../b", None).unwrap(), "/b");
        assert_eq!(resolve("file:/a#frag", None).unwrap(), "/a");
        assert_eq!(
            resolve("file://evil.com/a", None),
            Err(PathProblem::BadFileUrl)
        );
        assert_eq!(resolve("file:///a%00b", None), Err(PathProblem::Nul));
        assert_eq!(resolve("file:///a%ff", None), Err(PathProblem::BadFileUrl));
        assert_eq!(resolve("file:///a%2", None), Err(PathProblem::BadFileUrl));
        assert_eq!(resolve("file:relative", None), Err(PathProblem::BadFileUrl));
    }

    #[test]
    fn relative_and_nul() {
        assert_eq!(
            resolve("../../etc", Some(Path::new("/w/x"))).unwrap(),
            "/etc"
        );
        assert_eq!(
            resolve("a\0b", Some(Path::new("/w"))),
            Err(PathProblem::Nul)
        );
        assert_eq!(resolve("", Some(Path::new("/w"))).unwrap(), "/w");
    }
}
