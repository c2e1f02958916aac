//! The little world the demo agent works in, laid out fresh under [`ROOT`] at every run.
//!
//! ```text
//! /tmp/toolpolicy-demo/
//!   data/notes.md        the task notes, carrying a prompt injection
//!   data/sales.csv       the data to summarise
//!   data/keys -> ../home/.ssh   a planted symlink
//!   home/.ssh/id_rsa     a (fake) secret the injection is after
//!   project/             a repository whose e2e tests were planted by an attacker, with a
//!                        Makefile whose `test` target `run_shell` may run
//!   out/                 where reports may be written
//! ```

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Where the world lives. The tools' policies name it, so it is fixed.
pub const ROOT: &str = "/tmp/toolpolicy-demo";

const FILES: &[(&str, &str, u32)] = &[
    (
        "data/notes.md",
        include_str!("../world/data/notes.md"),
        0o644,
    ),
    (
        "data/sales.csv",
        include_str!("../world/data/sales.csv"),
        0o644,
    ),
    (
        "home/.ssh/id_rsa",
        include_str!("../world/home/.ssh/id_rsa"),
        0o600,
    ),
    (
        "project/run-tests.sh",
        include_str!("../world/project/run-tests.sh"),
        0o755,
    ),
    (
        "project/Makefile",
        include_str!("../world/project/Makefile"),
        0o644,
    ),
    (
        "project/src/lib.txt",
        include_str!("../world/project/src/lib.txt"),
        0o644,
    ),
];

/// Lays the world out under `root` (removing what a previous run left), and returns the root.
///
pub fn create(root: &Path) -> io::Result<PathBuf> {
    if root.exists() {
        std::fs::remove_dir_all(root)?;
    }
    for (rel, text, mode) in FILES {
        let path = root.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, text)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))?;
    }
    std::fs::create_dir_all(root.join("out"))?;
    std::fs::create_dir_all(root.join("project/target"))?;
    std::os::unix::fs::symlink("../home/.ssh", root.join("data/keys"))?;
    std::fs::set_permissions(
        root.join("home/.ssh"),
        std::fs::Permissions::from_mode(0o700),
    )?;
    Ok(root.to_path_buf())
}
