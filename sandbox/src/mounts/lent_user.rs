//! The strict view's user namespace, lent with its view namespace instead of made per run.
//!
//! A strict run's child leaves the runner's user namespace last, once its view is built, for a
//! user namespace that owns none of the run's other namespaces: the command, uid 1000 there,
//! holds no capability over any mount of its view. Making one per run cost the child an
//! `unshare`, four opens on the runner's procfs (its own `/proc/<pid>` directory and the three
//! map files, each a new procfs inode) and three writes, about 75 µs, and the kernel freed it
//! again after the run (`sandbox/PERFORMANCE.md`). Yet such a user namespace is the same for
//! every run of the runner's ids, so each leased view namespace ([`super::view_ns`]) carries
//! one, made with it, which its runs' children join with `setns` where they made their own:
//!
//! * **Made outside any run, owning nothing.** A helper process of the runner (in the held
//!   user namespace, for a template held in one, [`super::held`]) `unshare`s it and writes its
//!   maps as a run's child did: the runner's uid and gid become 1000, and `setgroups` is
//!   denied. The helper makes no other namespace in it, so it owns none: the view's mount, IPC
//!   and network namespaces stay the runner's (or the held one's).
//! * **Nothing a run can change in it.** A user namespace holds its id maps, its `setgroups`
//!   setting and its project-id map, each written once; keyrings; and limits under
//!   `/proc/sys/user`. The uid, gid and `setgroups` maps are written when it is made, and so
//!   is the project-id map where the parent maps any project id (where it maps none, no one
//!   can map one here). The command reaches no writable procfs anyway (its `/proc` is mounted
//!   read-only, with a read-only Landlock rule), the strict seccomp program refuses `keyctl`,
//!   `add_key` and `request_key` (let through, a key one run added to its user keyring was
//!   found by the next), and the limits are written only with `CAP_SYS_RESOURCE`,
//!   which the command has nowhere. What a run counts there (its processes) ends with its pid
//!   namespace, before the view namespace is lent again.
//! * **Kept when its view namespace closes.** A view namespace closed because its run left
//!   something in it (a file in its scratch, say) gives its user namespace to the next one
//!   made for the template, since the run left nothing in that: a run that leaves files
//!   behind each time does not pay for a user namespace each time either (making one, in a
//!   helper process, costs more than a run's child making its own did).
//! * **Only for the ids it maps.** A run whose effective uid or gid differs from those it was
//!   made for makes its own, as before; so does every run when none could be made.
//!
//! What a later run can tell: that it shares its user namespace with earlier runs of the same
//! view namespace (the namespace's inode number), as it shares the view's other namespaces.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::held::{in_helper, Enter};
use super::os_err;

/// A user namespace made for a view namespace's runs, mapping the runner's ids as a run's own
/// would.
pub(crate) struct LentUser {
    ns: OwnedFd,
    /// The runner's effective uid and gid it maps to 1000.
    ids: (libc::uid_t, libc::gid_t),
}

impl LentUser {
    /// Makes one for a runner of `euid` and `egid`, in the held user namespace `held` if given
    /// (the view namespace's own).
    pub(crate) fn make(
        held: Option<RawFd>,
        euid: libc::uid_t,
        egid: libc::gid_t,
    ) -> Result<LentUser, String> {
        let enter = match held {
            Some(user) => Enter::Join { user, mnt: None },
            None => Enter::Here,
        };
        let ns = in_helper(enter, || unshare_here(euid, egid))?;
        Ok(LentUser {
            ns,
            ids: (euid, egid),
        })
    }

    /// Whether a run of these ids may join it.
    pub(crate) fn serves(&self, euid: libc::uid_t, egid: libc::gid_t) -> bool {
        self.ids == (euid, egid)
    }

    /// In a run's child, once its view is built: leaves the runner's (or the held) user
    /// namespace for this one.
    pub(crate) fn join(&self) -> Result<(), String> {
        // SAFETY: setns on a descriptor the view namespace holds; the child is one thread with
        // a filesystem context of its own.
        if unsafe { libc::setns(self.ns.as_raw_fd(), libc::CLONE_NEWUSER) } != 0 {
            return Err(os_err("join the view's user namespace".into()));
        }
        Ok(())
    }
}

/// In a helper process: moves it into a new user namespace, writes its maps (and its project-id
/// map, where the parent has one), and opens it.
fn unshare_here(euid: libc::uid_t, egid: libc::gid_t) -> Result<OwnedFd, String> {
    let projid = first_project_id()?;
    // A helper process of one thread may make a user namespace.
    let ns = crate::netns::unshare_own(libc::CLONE_NEWUSER, "user")?;
    crate::child::write_id_maps(None, euid, egid)?;
    if let Some(id) = projid {
        std::fs::write("/proc/self/projid_map", format!("{id} {id} 1"))
            .map_err(|e| format!("write the view's user namespace's projid_map: {e}"))?;
    }
    Ok(ns)
}

/// The first project id the current user namespace maps, if it maps any: a map written in a
/// child may only name ids its parent maps, so without one no one can write the child's.
fn first_project_id() -> Result<Option<u32>, String> {
    let map = std::fs::read_to_string("/proc/self/projid_map")
        .map_err(|e| format!("read the runner's projid_map: {e}"))?;
    Ok(map
        .split_whitespace()
        .next()
        .and_then(|first| first.parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a helper joined to `user`: its four maps as `/proc/self` shows them, and what writing
    /// each again gave.
    fn maps_and_rewrites(user: RawFd) -> (String, Vec<std::io::Result<()>>) {
        let files = ["uid_map", "gid_map", "setgroups", "projid_map"];
        let enter = Enter::Join { user, mnt: None };
        in_helper(enter, || {
            let path = |f: &str| format!("/proc/self/{f}");
            let shown: String = files
                .iter()
                .map(|f| std::fs::read_to_string(path(f)).unwrap_or_default())
                .collect();
            let contents = ["0 0 1", "0 0 1", "allow", "0 0 1"];
            let rewrites = files
                .iter()
                .zip(contents)
                .map(|(f, c)| std::fs::write(path(f), c))
                .collect();
            Ok((shown, rewrites))
        })
        .expect("a helper joined to the lent user namespace")
    }

    #[test]
    fn a_lent_user_namespace_maps_the_runner_to_1000_and_no_map_can_be_written_again() {
        // SAFETY: geteuid and getegid cannot fail.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let Some(user) = crate::test_kernel::made_as_root(
            LentUser::make(None, euid, egid),
            "a lent user namespace",
        ) else {
            return;
        };
        assert!(user.serves(euid, egid) && !user.serves(euid + 1, egid));
        let (shown, rewrites) = maps_and_rewrites(user.ns.as_raw_fd());
        let words: Vec<&str> = shown.split_whitespace().collect();
        assert_eq!(
            words[..7],
            [
                "1000",
                &euid.to_string(),
                "1",
                "1000",
                &egid.to_string(),
                "1",
                "deny"
            ],
            "{shown}"
        );
        assert_eq!(words.len(), 10, "a project-id map too: {shown}");
        each_refused(rewrites);
        // Made in a held user namespace, which maps no project id: none is mapped, and none
        // can be.
        let held = in_helper(
            Enter::New { euid, egid },
            super::super::held::HeldUserNs::here,
        )
        .expect("a held user namespace");
        let user = LentUser::make(Some(held.raw_fd()), euid, egid).expect("a held lent one");
        let (shown, rewrites) = maps_and_rewrites(user.ns.as_raw_fd());
        assert_eq!(shown.split_whitespace().count(), 7, "{shown}");
        each_refused(rewrites);
    }

    fn each_refused(rewrites: Vec<std::io::Result<()>>) {
        for (file, rewrite) in ["uid_map", "gid_map", "setgroups", "projid_map"]
            .iter()
            .zip(rewrites)
        {
            assert!(rewrite.is_err(), "{file} was written again");
        }
    }
}
