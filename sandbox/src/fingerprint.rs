//! What a set of paths named when a Landlock ruleset was built, and whether they still do.
//!
//! A rule holds the inode its path named at build time, not the path. A ruleset kept for
//! later runs ([`crate::slots`]) is only as good as a fresh build while every path still leads,
//! without a symlink, to the same inode: a root renamed away and recreated must be the new
//! directory, and a root replaced by a symlink must be refused or skipped, never served.
//!
//! The fingerprint records, before any rule is opened, every ancestor directory of every rule
//! path (`lstat`: type, device, inode, mode, owner), and then for each rule what its opened
//! descriptor was (`fstat`), or that it could not be opened. [`Fingerprint::holds`] asks the
//! same questions again, one `fstatat(AT_SYMLINK_NOFOLLOW)` per distinct path: a path resolves
//! without symlinks to the recorded inode exactly when none of its ancestors changed type,
//! identity or permissions and its last component is that inode, not a link. A change made
//! while the fingerprint was taken is caught too, as the ancestors are recorded first.
//!
//! Cost: one `fstatat` per rule and per distinct ancestor at every lease (a cheaper inotify
//! watch set would also need mount-table change detection to be complete; not done).

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// What a path was: its file's identity and permissions, or the error that stopped `lstat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// Device, inode, mode (type and permissions), owner and group.
    Present {
        dev: u64,
        ino: u64,
        mode: u32,
        uid: u32,
        gid: u32,
    },
    /// An ancestor that did not exist or could not be looked at (the errno).
    Failed(i32),
    /// A rule path that could not be opened without following a link (missing, a symlink, or
    /// below something that is not a directory): no rule was made.
    NoRule,
}

impl Seen {
    fn of_meta(meta: &std::fs::Metadata) -> Seen {
        Seen::Present {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            uid: meta.uid(),
            gid: meta.gid(),
        }
    }

    /// `lstat` of `path` now.
    fn lstat(path: &CString) -> Seen {
        match lstat(path) {
            Ok(st) => Seen::Present {
                dev: st.st_dev,
                ino: st.st_ino,
                mode: st.st_mode,
                uid: st.st_uid,
                gid: st.st_gid,
            },
            Err(errno) => Seen::Failed(errno),
        }
    }

    /// What a rule path is now, in the terms it was recorded in: a link or a failed lookup is
    /// "no rule" (the ancestors' own entries tell apart the ways of getting there).
    fn rule_now(path: &CString) -> Seen {
        match Seen::lstat(path) {
            Seen::Present { mode, .. } if mode & libc::S_IFMT == libc::S_IFLNK => Seen::NoRule,
            Seen::Failed(_) => Seen::NoRule,
            seen => seen,
        }
    }
}

/// What the paths of one ruleset named when it was built (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Fingerprint {
    ancestors: Vec<(CString, Seen)>,
    rules: Vec<(CString, Seen)>,
}

/// `lstat` (`fstatat` with `AT_SYMLINK_NOFOLLOW`, no allocation): the file the path names, a
/// link itself rather than its target, or the errno.
pub(crate) fn lstat(path: &CStr) -> Result<libc::stat, i32> {
    // SAFETY: an all-zero stat is valid; fstatat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a live stat buffer.
    let rc = unsafe {
        libc::fstatat(
            libc::AT_FDCWD,
            path.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    Ok(st)
}

fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

impl Fingerprint {
    /// Starts a fingerprint of `paths` by recording their ancestors now: call it before any of
    /// them is opened, then [`Fingerprint::rule`] for each as it is.
    pub(crate) fn begin<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Fingerprint {
        let mut ancestors: Vec<&Path> = paths
            .into_iter()
            .flat_map(|p| p.ancestors().skip(1))
            .filter(|a| !a.as_os_str().is_empty())
            .collect();
        ancestors.sort_unstable();
        ancestors.dedup();
        Fingerprint {
            ancestors: ancestors
                .into_iter()
                .filter_map(c_path)
                .map(|c| {
                    let seen = Seen::lstat(&c);
                    (c, seen)
                })
                .collect(),
            rules: Vec::new(),
        }
    }

    /// Records that the rule for `path` was made from a descriptor with `meta`, or (`None`)
    /// that none was made because the path could not be opened without a link.
    pub(crate) fn rule(&mut self, path: &Path, meta: Option<&std::fs::Metadata>) {
        if let Some(c) = c_path(path) {
            let seen = meta.map_or(Seen::NoRule, Seen::of_meta);
            self.rules.push((c, seen));
        }
    }

    /// Whether every path still names what it named: a fresh build would make the same rules
    /// from the same inodes.
    pub(crate) fn holds(&self) -> bool {
        self.ancestors
            .iter()
            .all(|(p, seen)| Seen::lstat(p) == *seen)
            && self
                .rules
                .iter()
                .all(|(p, seen)| Seen::rule_now(p) == *seen)
    }

    /// How many paths a check looks at.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ancestors.len() + self.rules.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn take(paths: &[&Path]) -> Fingerprint {
        let mut f = Fingerprint::begin(paths.iter().copied());
        for p in paths {
            let meta = crate::mounts::open_no_symlinks(p)
                .ok()
                .and_then(|fd| fd.metadata().ok());
            f.rule(p, meta.as_ref());
        }
        f
    }

    #[test]
    fn holds_until_a_path_or_an_ancestor_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("a/root");
        std::fs::create_dir_all(&root).unwrap();
        let missing = base.join("a/missing");
        let f = take(&[&root, &missing]);
        assert!(f.holds());
        assert_eq!(f.len(), base.ancestors().count() + 1 + 2);

        // Renamed away and recreated: a new inode.
        std::fs::rename(&root, base.join("a/old")).unwrap();
        std::fs::create_dir(&root).unwrap();
        assert!(!f.holds());
        let f = take(&[&root, &missing]);
        assert!(f.holds());

        // A missing optional path that appears.
        std::fs::create_dir(&missing).unwrap();
        assert!(!f.holds());
        std::fs::remove_dir(&missing).unwrap();
        assert!(f.holds());

        // An ancestor replaced by a symlink to a directory holding the same inode.
        std::fs::rename(base.join("a"), base.join("b")).unwrap();
        std::os::unix::fs::symlink(base.join("b"), base.join("a")).unwrap();
        assert!(!f.holds());
    }

    /// What a lease's check costs per path, against the `statx` that `std::fs::symlink_metadata`
    /// does: `cargo test -p sandbox --lib revalidation_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn revalidation_cost_per_root() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let roots: Vec<PathBuf> = (0..500).map(|i| base.join(format!("r{i:03}"))).collect();
        for r in &roots {
            std::fs::create_dir(r).unwrap();
        }
        let refs: Vec<&Path> = roots.iter().map(PathBuf::as_path).collect();
        let f = take(&refs);
        let rounds = 200;
        let (mut check, mut statx) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
        for _ in 0..rounds {
            let t = std::time::Instant::now();
            assert!(f.holds());
            check += t.elapsed();
            let t = std::time::Instant::now();
            for r in &roots {
                std::hint::black_box(std::fs::symlink_metadata(r).unwrap());
            }
            statx += t.elapsed();
        }
        let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / (rounds * roots.len()) as f64;
        println!(
            "500 roots ({} paths checked): {:.2} µs per root; one statx per root: {:.2} µs",
            f.len(),
            per(check),
            per(statx)
        );
    }

    #[test]
    fn a_rule_path_replaced_by_a_symlink_to_itself_no_longer_holds() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        let f = take(&[&root]);
        std::fs::rename(&root, base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), &root).unwrap();
        assert!(!f.holds());
        // So does a permission change of an ancestor.
        std::fs::remove_file(&root).unwrap();
        std::fs::rename(base.join("real"), &root).unwrap();
        assert!(f.holds());
        use std::os::unix::fs::PermissionsExt;
        let before = std::fs::metadata(&base).unwrap().permissions();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o711)).unwrap();
        assert!(!f.holds());
        std::fs::set_permissions(&base, before).unwrap();
        assert!(f.holds());
    }
}
