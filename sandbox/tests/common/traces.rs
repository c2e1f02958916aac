//! Host-side resets and checks shared by the escape tests: what a run may leave behind.

use std::fs;
use std::os::unix::fs::MetadataExt;

/// Removes `path` (a file the bare run may have created) before each run.
pub fn remove(path: &str) -> impl Fn() + 'static {
    let path = path.to_string();
    move || {
        let _ = fs::remove_file(&path);
    }
}

/// Host check: `path` does not exist.
pub fn absent(path: &str) -> impl Fn() -> Result<(), String> + 'static {
    let path = path.to_string();
    move || match fs::symlink_metadata(&path) {
        Err(_) => Ok(()),
        Ok(_) => Err(format!("{path} exists")),
    }
}

/// Host check: `path` is absent or carries neither the set-user-ID nor the set-group-ID bit.
pub fn no_setid(path: &str) -> impl Fn() -> Result<(), String> + 'static {
    let path = path.to_string();
    move || match fs::symlink_metadata(&path) {
        Err(_) => Ok(()),
        Ok(m) if m.mode() & 0o6000 == 0 => Ok(()),
        Ok(m) => Err(format!("{path} has mode {:o}", m.mode() & 0o7777)),
    }
}
