//! Fewer Landlock rules for the strict view, granting the same access to everything the tool
//! can reach: decided once per prepared policy ([`fold`]), so that a run builds fewer rules.
//!
//! Landlock decides an access by walking up from the file to the root of the view, crossing
//! each mount at its mount point, and grants what the rules on the way grant (see
//! `tests/landlock_facts.rs`). Rule paths are canonical and each rule is made on the inode its
//! path shows in the view (the topmost mount there). Two consequences:
//!
//! * **Covered rules.** A rule whose path lies beneath another rule's path, with no more rights
//!   than that one, grants nothing more: every walk from beneath it passes the other rule.
//!   Dropping it never widens access; at most it narrows what a hard link elsewhere would have
//!   reached of a file rule. Roots inside the private `/tmp` are all covered by `/tmp`'s rule
//!   (the read-only binds keep them unwritable, `EROFS`, as before).
//! * **Groups.** Where a directory of the view's own (on its read-only root filesystem, made
//!   only to hold mount points) holds, anywhere beneath it, nothing but the binds of declared
//!   roots with exactly the same rights (and the view's own directories and copied links on
//!   the way to them), one rule on that directory grants what their rules grant: the walk
//!   from inside each bind leaves it at its mount point, in that directory. What the group's
//!   rule adds is the directory itself and those on the way, which hold nothing but the roots'
//!   mount points, on a read-only filesystem: listing them shows the roots' names, which the
//!   mount table shows anyway.
//!
//! A group is never made where the directory, or anything beneath it, is anything else: a
//! mount of the sandbox's own (`/proc`, `/dev`, `/tmp`, `/dev/shm`, `/dev/pts`), a resolver
//! file, a system bind, an executable, a root with other rights; nor at `/`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use landlock::{AccessFs, BitFlags, ABI};

use crate::landlock_rules::PathRule;
use crate::mounts::MountOp;

/// The paths a mount step puts something at (the private `/tmp` also shows at `/dev/shm`).
fn targets(op: &MountOp) -> Vec<&Path> {
    match op {
        MountOp::Scratch { tmp: true, .. } => vec![Path::new("/tmp"), Path::new("/dev/shm")],
        MountOp::Devpts => vec![Path::new("/dev/pts"), Path::new("/dev/ptmx")],
        other => vec![other.target()],
    }
}

/// `rules` with the covered ones dropped and groups of roots folded into one rule each (see the
/// module docs). `mask` gives a rule's rights on a directory.
pub(crate) fn fold(
    rules: Vec<PathRule>,
    mounts: &[MountOp],
    mask: &dyn Fn(&PathRule) -> BitFlags<AccessFs>,
) -> Vec<PathRule> {
    let rules = drop_covered(rules, mask);
    group(rules, mounts, mask)
}

/// [`fold`]'s masks for a ruleset of `abi` (directory rights, `unix_connect_beneath` as the
/// ruleset will apply it).
pub(crate) fn masks(
    abi: i32,
    unix_connect_beneath: Option<Vec<PathBuf>>,
) -> impl Fn(&PathRule) -> BitFlags<AccessFs> {
    move |rule| {
        crate::landlock_rules::access_for(
            rule,
            ABI::from(abi),
            true,
            unix_connect_beneath.as_deref(),
        )
    }
}

/// Whether `inner` lies strictly beneath `outer`.
fn strictly_beneath(inner: &Path, outer: &Path) -> bool {
    inner != outer && inner.starts_with(outer)
}

/// Each rule path's rules, by index. Both passes look a path's ancestors up here instead of
/// comparing every pair of rules: a policy may declare hundreds of roots, and a one-shot
/// `policy-sandbox run` folds them on every start (500 roots took 60 ms of comparisons).
/// `Path` hashes and compares by components, as `Path::starts_with` does, so walking
/// `ancestors()` finds exactly the rules a prefix test would.
fn by_path(rules: &[PathRule]) -> HashMap<&Path, Vec<usize>> {
    let mut index: HashMap<&Path, Vec<usize>> = HashMap::with_capacity(rules.len());
    for (i, r) in rules.iter().enumerate() {
        index.entry(r.path.as_path()).or_default().push(i);
    }
    index
}

/// Drops each rule that another grants beneath: a rule at or above its path with at least its
/// rights, that exists whenever it does (a missing optional rule path leaves a required one
/// beneath it to fail as before).
fn drop_covered(
    rules: Vec<PathRule>,
    mask: &dyn Fn(&PathRule) -> BitFlags<AccessFs>,
) -> Vec<PathRule> {
    let masks: Vec<BitFlags<AccessFs>> = rules.iter().map(mask).collect();
    let index = by_path(&rules);
    let covered = |i: usize| {
        let (r, m) = (&rules[i], masks[i]);
        // The first ancestor is the path itself: a rule on the same path covers only when it
        // comes first or has other rights (two equal rules keep the first).
        r.path.ancestors().enumerate().any(|(depth, at)| {
            index.get(at).into_iter().flatten().any(|&j| {
                let (o, om) = (&rules[j], masks[j]);
                let above = depth > 0 || j < i || om != m;
                j != i && above && om.contains(m) && (r.optional || !o.optional)
            })
        })
    };
    let keep: Vec<bool> = (0..rules.len()).map(|i| !covered(i)).collect();
    rules
        .into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

/// Folds roots' rules into one rule per view-own directory that holds only them.
fn group(
    rules: Vec<PathRule>,
    mounts: &[MountOp],
    mask: &dyn Fn(&PathRule) -> BitFlags<AccessFs>,
) -> Vec<PathRule> {
    let binds: HashSet<&Path> = mounts
        .iter()
        .filter_map(|op| match op {
            MountOp::Bind { path, .. } => Some(path.as_path()),
            _ => None,
        })
        .collect();
    let all_targets: HashSet<&Path> = mounts.iter().flat_map(targets).collect();
    let masks: Vec<BitFlags<AccessFs>> = rules.iter().map(mask).collect();
    // Members: rules on a bind's path. A group needs every member under it to have one mask.
    let member: Vec<bool> = rules
        .iter()
        .map(|r| binds.contains(r.path.as_path()))
        .collect();
    let mut members_with: HashMap<BitFlags<AccessFs>, HashSet<&Path>> = HashMap::new();
    for ((r, &m), _) in rules.iter().zip(&masks).zip(&member).filter(|(_, is)| **is) {
        members_with.entry(m).or_default().insert(r.path.as_path());
    }
    let no_members = HashSet::new();
    let mut valid: HashMap<(PathBuf, BitFlags<AccessFs>), bool> = HashMap::new();
    let mut is_valid = |dir: &Path, m: BitFlags<AccessFs>| -> bool {
        if let Some(v) = valid.get(&(dir.to_path_buf(), m)) {
            return *v;
        }
        let members = members_with.get(&m).unwrap_or(&no_members);
        // `p` lies strictly beneath `dir`: whether it is at or beneath a member that does too,
        // i.e. one of its ancestors on the way up to `dir` is a member.
        let in_a_member = |p: &Path| {
            p.ancestors()
                .take_while(|a| *a != dir)
                .any(|a| members.contains(a))
        };
        // The directory is the view's own: no mount or link at it or above it.
        let own = !dir.ancestors().any(|a| all_targets.contains(a));
        // Beneath it: only the members' binds (and what lies inside them), and copied links.
        let only_members = mounts.iter().all(|op| {
            matches!(op, MountOp::Symlink { .. })
                || targets(op)
                    .iter()
                    .all(|t| !strictly_beneath(t, dir) || in_a_member(t))
        });
        let only_member_rules = rules
            .iter()
            .all(|r| !strictly_beneath(&r.path, dir) || in_a_member(&r.path));
        let v = own && only_members && only_member_rules;
        valid.insert((dir.to_path_buf(), m), v);
        v
    };
    // The highest valid directory above each member.
    let mut folded_into: Vec<Option<PathBuf>> = vec![None; rules.len()];
    for (i, r) in rules.iter().enumerate() {
        if !member[i] {
            continue;
        }
        let mut ancestors: Vec<&Path> = r.path.ancestors().skip(1).collect();
        ancestors.reverse();
        folded_into[i] = ancestors
            .into_iter()
            .filter(|d| d.parent().is_some())
            .find(|d| is_valid(d, masks[i]))
            .map(Path::to_path_buf);
    }
    let mut out = Vec::with_capacity(rules.len());
    let mut made: HashSet<(PathBuf, BitFlags<AccessFs>)> = HashSet::new();
    for ((r, m), into) in rules.into_iter().zip(masks).zip(folded_into) {
        let Some(dir) = into else {
            out.push(r);
            continue;
        };
        if !made.insert((dir.clone(), m)) {
            continue;
        }
        out.push(PathRule {
            path: dir,
            optional: true,
            ..r
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(path: &str, write: bool, exec: bool, optional: bool) -> PathRule {
        PathRule {
            path: path.into(),
            read: true,
            write,
            exec,
            optional,
        }
    }

    fn bind(path: &str, write: bool, exec: bool) -> MountOp {
        MountOp::Bind {
            path: path.into(),
            write,
            exec,
            device: false,
            optional: true,
        }
    }

    fn abi() -> i32 {
        crate::landlock_rules::negotiated_abi(crate::hostcaps::landlock_abi()).max(1)
    }

    /// What a walk from `path` up to `/` collects from `rules`: the access to `path`.
    fn access(
        rules: &[PathRule],
        path: &Path,
        mask: &dyn Fn(&PathRule) -> BitFlags<AccessFs>,
    ) -> BitFlags<AccessFs> {
        rules
            .iter()
            .filter(|r| path.starts_with(&r.path))
            .fold(BitFlags::empty(), |a, r| a | mask(r))
    }

    /// The paths whose access must not change: every rule path, a file in each, and the
    /// view's paths that are not its own directories above roots.
    fn probes(rules: &[PathRule]) -> Vec<PathBuf> {
        let mut p: Vec<PathBuf> = rules.iter().map(|r| r.path.clone()).collect();
        p.extend(rules.iter().map(|r| r.path.join("f")));
        for extra in [
            "/proc/1",
            "/dev/null",
            "/tmp/x",
            "/usr/bin/sh",
            "/etc/passwd",
            "/",
        ] {
            p.push(extra.into());
        }
        p
    }

    fn view(mounts: &[MountOp], rules: Vec<PathRule>) -> (Vec<PathRule>, Vec<PathRule>) {
        let mask = masks(abi(), Some(vec![PathBuf::from("/tmp")]));
        let folded = fold(rules.clone(), mounts, &mask);
        for p in probes(&rules) {
            assert_eq!(
                access(&rules, &p, &mask),
                access(&folded, &p, &mask),
                "access to {} changed: {folded:?}",
                p.display()
            );
        }
        (rules, folded)
    }

    fn own_mounts() -> Vec<MountOp> {
        vec![
            MountOp::Tmpfs {
                path: "/dev".into(),
                exec: false,
                size_bytes: 1,
            },
            MountOp::Scratch {
                size_bytes: 1,
                tmp: true,
                exec: false,
            },
            MountOp::Devpts,
            MountOp::Proc,
            bind("/usr", false, true),
            bind("/etc", false, false),
        ]
    }

    fn own_rules() -> Vec<PathRule> {
        vec![
            rule("/usr", false, true, false),
            rule("/etc", false, false, false),
            rule("/proc", false, false, false),
            rule("/tmp", true, false, false),
            rule("/dev/shm", true, false, false),
            rule("/dev/pts", true, false, false),
        ]
    }

    #[test]
    fn five_hundred_sibling_roots_are_one_rule_and_read_and_write_roots_stay_apart() {
        let mut mounts = own_mounts();
        let mut rules = own_rules();
        for i in 0..500 {
            let p = format!("/srv/data/r{i:03}");
            mounts.push(bind(&p, false, false));
            rules.push(rule(&p, false, false, true));
        }
        mounts.push(bind("/srv/out", true, false));
        rules.push(rule("/srv/out", true, false, true));
        let (_, folded) = view(&mounts, rules);
        let kept: Vec<&Path> = folded.iter().map(|r| r.path.as_path()).collect();
        assert!(kept.contains(&Path::new("/srv/data")), "{kept:?}");
        assert!(kept.contains(&Path::new("/srv/out")), "{kept:?}");
        assert!(!kept.contains(&Path::new("/srv")), "{kept:?}");
        assert_eq!(folded.len(), own_rules().len() + 2, "{kept:?}");
        // A read root's group never grants write.
        let data = folded.iter().find(|r| r.path == Path::new("/srv/data"));
        assert!(data.is_some_and(|r| !r.write && r.read));
    }

    #[test]
    fn roots_in_the_private_tmp_and_under_usr_are_covered_by_their_rules() {
        let mut mounts = own_mounts();
        let mut rules = own_rules();
        for p in ["/tmp/t/a", "/tmp/t/b", "/usr/share/doc"] {
            mounts.push(bind(p, false, false));
            rules.push(rule(p, false, false, true));
        }
        let (_, folded) = view(&mounts, rules);
        assert_eq!(folded.len(), own_rules().len(), "{folded:?}");
    }

    #[test]
    fn no_group_holds_anything_but_its_roots() {
        let mut mounts = own_mounts();
        let mut rules = own_rules();
        // An executable beside roots: /opt/app is not a group.
        for (p, exec) in [
            ("/opt/app/r1", false),
            ("/opt/app/r2", false),
            ("/opt/app/bin/tool", true),
        ] {
            mounts.push(bind(p, false, exec));
            rules.push(rule(p, false, exec, !exec));
        }
        // A resolver file beside roots.
        for p in ["/var/x/r1", "/var/x/r2"] {
            mounts.push(bind(p, false, false));
            rules.push(rule(p, false, false, true));
        }
        mounts.push(MountOp::File {
            path: "/var/x/resolv.conf".into(),
            content: Vec::new(),
        });
        // A root with a protected path kept inside it, and a root with a bind at its parent.
        mounts.push(bind("/home/u/w", true, false));
        rules.push(rule("/home/u/w", true, false, true));
        mounts.push(MountOp::Keep {
            path: "/home/u/w/.git".into(),
            read_only: true,
            exec: false,
        });
        let (_, folded) = view(&mounts, rules);
        let paths: Vec<&Path> = folded.iter().map(|r| r.path.as_path()).collect();
        for kept in ["/opt/app/r1", "/opt/app/r2", "/var/x/r1", "/var/x/r2"] {
            assert!(paths.contains(&Path::new(kept)), "{kept}: {paths:?}");
        }
        // The executable alone in its directory may be that directory's group, never /opt/app's.
        assert!(!paths.contains(&Path::new("/opt/app")), "{paths:?}");
        assert!(!paths.contains(&Path::new("/var/x")), "{paths:?}");
        // The write root with its protected path inside is grouped at /home (only it beneath).
        assert!(paths.contains(&Path::new("/home")), "{paths:?}");
        assert!(
            !paths.iter().any(|p| p.parent().is_none()),
            "never /: {paths:?}"
        );
    }

    #[test]
    fn a_required_rule_under_a_missing_optional_one_stays() {
        let rules = vec![
            rule("/a", true, true, true),
            rule("/a/b", false, false, false),
        ];
        let (_, folded) = view(&[], rules);
        assert_eq!(folded.len(), 2);
        let rules = vec![
            rule("/a", true, true, false),
            rule("/a/b", false, false, true),
        ];
        let (_, folded) = view(&[], rules);
        assert_eq!(folded.len(), 1);
    }
}
