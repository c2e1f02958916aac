//! Canonical paths for the plan, at the cost of one system call when a path already is one.
//!
//! `std::fs::canonicalize` (glibc's `realpath`) reads every component with `readlink`: six
//! calls for `/usr/lib/x86_64-linux-gnu/libc.so.6`, and a plan made for 500 declared roots
//! asked for thousands of them (a quarter of a 500-root `policy-sandbox run`). Most paths the
//! plan handles are canonical already (declared roots must be), and one `openat2` with
//! `RESOLVE_NO_SYMLINKS` proves it: a clean absolute path that resolves without following any
//! link names itself. Anything else takes the `realpath` way, so the answer is always the same.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The canonical form of `path` (absolute, no `.`, `..` or symlinks), as
/// [`std::fs::canonicalize`] gives it.
///
/// ```
/// # use std::path::Path;
/// # fn main() -> std::io::Result<()> {
/// let dir = tempfile::tempdir()?;
/// let real = std::fs::canonicalize(dir.path())?;
/// std::os::unix::fs::symlink(&real, real.join("link"))?;
/// assert_eq!(sandbox::canonical::canonicalize(&real.join("link"))?, real);
/// assert_eq!(sandbox::canonical::canonicalize(&real)?, real);
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// The path does not exist or cannot be searched, as with [`std::fs::canonicalize`].
pub fn canonicalize(path: &Path) -> std::io::Result<PathBuf> {
    if is_canonical(path) {
        return Ok(path.to_path_buf());
    }
    std::fs::canonicalize(path)
}

/// Whether `path` is canonical: clean and absolute as written, and it resolves (it exists)
/// without following a symlink on the way or at its end.
pub fn is_canonical(path: &Path) -> bool {
    is_clean_absolute(path) && crate::mounts::open_no_symlinks(path).is_ok()
}

/// Absolute, with no empty, `.` or `..` component and no trailing slash (`/` itself is clean).
fn is_clean_absolute(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    if bytes == b"/" {
        return true;
    }
    bytes.first() == Some(&b'/')
        && bytes[1..]
            .split(|&b| b == b'/')
            .all(|part| !matches!(part, b"" | b"." | b".."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_realpath_on_links_dots_and_missing_paths() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("d")).unwrap();
        std::fs::write(real.join("d/f"), b"").unwrap();
        std::os::unix::fs::symlink(real.join("d"), real.join("dir-link")).unwrap();
        std::os::unix::fs::symlink("f", real.join("d/file-link")).unwrap();
        std::os::unix::fs::symlink("nowhere", real.join("dangling")).unwrap();
        let cases = [
            "/".to_string(),
            format!("{}", real.display()),
            format!("{}/d", real.display()),
            format!("{}/d/", real.display()),
            format!("{}/d/f", real.display()),
            format!("{}/d/./f", real.display()),
            format!("{}/d/../d/f", real.display()),
            format!("{}//d", real.display()),
            format!("{}/dir-link/f", real.display()),
            format!("{}/d/file-link", real.display()),
            format!("{}/dangling", real.display()),
            format!("{}/missing", real.display()),
            "/proc/self".to_string(),
            "/proc/self/exe".to_string(),
            "relative/path".to_string(),
        ];
        for case in cases {
            let path = Path::new(&case);
            let fast = canonicalize(path).map_err(|e| e.kind());
            let slow = std::fs::canonicalize(path).map_err(|e| e.kind());
            assert_eq!(fast, slow, "{case}");
        }
    }
}
