//! The interpreter chain of a command, resolved when the plan is made: what one `execve` of a
//! script runs through, and what exec = deny must therefore admit.
//!
//! The kernel follows `#!` lines and ELF interpreters inside a single `execve`, so a script
//! whose first line names its interpreter by path (`#!/bin/sh`) needs only the Execute right on
//! each file of the chain. A *relay* is different: `#!/usr/bin/env python3` starts `env`, which
//! searches `PATH` for `python3` and executes it with `execve` calls of its own, one per
//! directory tried. The chain records the relays and how many of those calls the search makes,
//! so the supervisor admits exactly these and nothing after them
//! (`crate::supervisor`). Nesting (a relay's target being a script again) is followed up to
//! [`MAX_DEPTH`] levels.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

/// How many `#!` levels are followed (the kernel itself stops at 4 nested interpreters).
pub const MAX_DEPTH: usize = 4;

/// The programs an `execve` of a command runs through.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    /// Every file of the chain, the command first, each canonical: they need Execute.
    pub files: Vec<PathBuf>,
    /// The relays (`env`) that execute the next program themselves.
    pub relays: Vec<PathBuf>,
    /// The `execve` calls the relays make, failed `PATH` candidates included.
    pub relay_execs: u32,
    /// The human-readable chain (`script → /usr/bin/env → /usr/bin/python3.12`).
    pub steps: Vec<String>,
}

impl Chain {
    /// Whether the command is a script (its chain has a `#!` step).
    pub fn is_script(&self) -> bool {
        self.steps.len() > 1
    }
}

/// The `#!` line of `path`: the interpreter and its optional single argument.
pub fn shebang(path: &Path) -> Option<(PathBuf, Option<String>)> {
    let mut head = [0u8; 256];
    let mut f = std::fs::File::open(path).ok()?;
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    let line = head[..n].strip_prefix(b"#!")?;
    let end = line.iter().position(|&b| b == b'\n')?;
    let text = String::from_utf8_lossy(&line[..end]);
    let text = text.trim();
    // The kernel splits at the first blank only: the rest is one argument.
    let (interp, arg) = match text.split_once([' ', '\t']) {
        Some((i, a)) => (i, Some(a.trim().to_string()).filter(|a| !a.is_empty())),
        None => (text, None),
    };
    (!interp.is_empty()).then(|| (PathBuf::from(interp), arg))
}

/// Whether `path` is the `env` relay.
fn is_env(path: &Path) -> bool {
    path.file_name() == Some(OsStr::new("env"))
}

/// Resolves the chain of `program` (an absolute path). `path_var` is the `PATH` the command
/// will see (`None`: the libc default `/bin:/usr/bin`).
pub fn resolve(program: &Path, path_var: Option<&OsStr>) -> Chain {
    let mut chain = Chain::default();
    let canonical =
        |p: &Path| crate::canonical::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut current = canonical(program);
    chain.steps.push(program.display().to_string());
    for _ in 0..MAX_DEPTH {
        if !chain.files.contains(&current) {
            chain.files.push(current.clone());
        }
        let Some((interp, arg)) = shebang(&current) else {
            break;
        };
        let interp = canonical(&interp);
        chain.steps.push(interp.display().to_string());
        let relay_target = arg
            .as_deref()
            .filter(|a| is_env(&interp) && !a.starts_with('-') && !a.contains(['/', ' ']));
        let Some(name) = relay_target else {
            current = interp;
            continue;
        };
        if !chain.files.contains(&interp) {
            chain.files.push(interp.clone());
        }
        if !chain.relays.contains(&interp) {
            chain.relays.push(interp.clone());
        }
        let search = path_var.unwrap_or(OsStr::new("/bin:/usr/bin"));
        let mut found = None;
        for dir in std::env::split_paths(search) {
            chain.relay_execs += 1;
            let candidate = dir.join(name);
            if crate::plan::resolve_program(&candidate, None).is_some() && candidate.is_absolute() {
                found = Some(canonical(&candidate));
                break;
            }
        }
        match found {
            Some(target) => {
                chain.steps.push(target.display().to_string());
                current = target;
            }
            // Not found here: the relay's search fails in the sandbox too.
            None => break,
        }
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn env_relays_are_resolved_through_path() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let target = script(&bin, "tool-interp", "#!/bin/sh\necho\n");
        let s = script(dir.path(), "s", "#!/usr/bin/env tool-interp\n");
        let path = std::env::join_paths(["/nonexistent-dir", bin.to_str().unwrap()]).unwrap();
        let chain = resolve(&s, Some(&path));
        let env = std::fs::canonicalize("/usr/bin/env").unwrap();
        assert_eq!(chain.relays, vec![env.clone()]);
        assert_eq!(chain.relay_execs, 2, "{chain:?}");
        assert!(chain
            .files
            .contains(&std::fs::canonicalize(&target).unwrap()));
        assert!(chain
            .files
            .contains(&std::fs::canonicalize("/bin/sh").unwrap()));
        assert_eq!(chain.steps.len(), 4, "{chain:?}");
    }

    #[test]
    fn interpreters_by_path_need_no_relay() {
        let dir = tempfile::tempdir().unwrap();
        let s = script(dir.path(), "s", "#!/bin/sh -e\necho\n");
        assert_eq!(
            shebang(&s),
            Some((PathBuf::from("/bin/sh"), Some("-e".into())))
        );
        let chain = resolve(&s, None);
        assert!(chain.relays.is_empty());
        assert_eq!(chain.relay_execs, 0);
        assert!(chain.is_script());
        let plain = resolve(Path::new("/bin/sh"), None);
        assert!(!plain.is_script());
    }
}
