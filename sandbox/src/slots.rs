//! The hardened profile's slots: per prepared policy, a few scratch directories, each with a
//! Landlock ruleset built once for the policy's rules plus that directory, reused run after
//! run.
//!
//! A run needs a rule for its own scratch directory, and Landlock layers only narrow, so a
//! ruleset cannot be shared by runs with different scratch directories; but a run can lease a
//! directory together with its ruleset. Building a ruleset opens every rule path and adds one
//! rule each (a few µs per declared root), and making and removing a directory on a journaled
//! `$TMPDIR` costs about a tenth of a plain spawn: a slot pays both once.
//!
//! * **Lease** ([`lease`]): a free slot of the policy, or a new one. Before it is used, its
//!   directory must still be at its path (`lstat` against the descriptor held since it was
//!   made) and in the temporary directory the agent names now (`$TMPDIR`, else `/tmp`: one
//!   `stat`, compared with the directory it was made in; an agent that changed it gets a
//!   scratch directory there, as a fresh run would) or the slot is dropped, and its [`Fingerprint`] must hold (the leasing thread
//!   has the mount namespace and root the ruleset was built in, and every rule path still
//!   leads, without a link, to the inode its rule holds) or its ruleset is built again: a
//!   cached ruleset then grants exactly what a fresh one would. A rule holds an inode, which
//!   Landlock reaches by any path: a ruleset built in another namespace could grant, by another
//!   path, what the leasing thread's namespace hides at the rule path.
//! * **Return** ([`Lease`]'s drop): the run's processes have all ended (the zygote reports a
//!   run only after its process group is empty, or after giving up on it, which it says, see
//!   [`crate::zygote`]). The directory is emptied through its descriptor ([`Scratch::empty`])
//!   and checked to be still at its path after that; otherwise, or after a run whose end was
//!   not seen (the helper lost, the backstop's kill, a group that did not empty), or that
//!   changed the directory's extended attributes or inode flags ([`Scratch::as_made`]), the
//!   slot is dropped and never reused, and nothing that replaced its directory is followed.
//! * **Bounds**: at most [`PER_POLICY`] free slots per policy and [`TOTAL`] in all, the least
//!   recently used dropped first (descriptors closed, directory removed). Runs beyond them at
//!   the same time get slots of their own that are dropped after the run.
//! * **Fork and exit**: the slots belong to the process that made them; a child forked from it
//!   makes its own (the parent's directories and descriptors are never touched by it). The
//!   free slots' directories are removed when the process exits normally (`atexit`). A process
//!   killed outright leaves one directory per slot it held
//!   (`$TMPDIR/toolpolicy-scratch-<pid>-<n>`), unlocked by its death: the next process that
//!   makes one in that temporary directory empties and removes them
//!   ([`crate::scratch::sweep_stale`]).
//!
//! A process's only run ([`crate::runner::RunOptions::one_shot`]) takes no slot: it makes a
//! directory and a ruleset for itself ([`lease_once`]), without the [`Fingerprint`] a later
//! run would check, and removes them after the run.
//!
//! The ruleset descriptor is the agent's: it is built without privileges and never enforced on
//! the agent itself; the command's process enforces it
//! ([`crate::landlock_rules::restrict_self_with`]) and the descriptor is closed at its `execve`.
//! Each slot holds two descriptors (its directory and its ruleset).

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::MutexGuard;

use crate::fingerprint::Fingerprint;
use crate::landlock_rules::{LandlockSpec, PathRule};
use crate::per_process::PerProcess;
use crate::scratch::Scratch;

/// Free slots kept per policy: more runs at once than this get slots dropped after their run.
pub(crate) const PER_POLICY: usize = 4;
/// Free slots kept in all.
pub(crate) const TOTAL: usize = 32;

/// A scratch directory and the ruleset of a policy's rules with it.
struct Slot {
    scratch: Scratch,
    ruleset: OwnedFd,
    /// What the ruleset's rule paths named when it was built; `None` for a slot made for one
    /// run ([`lease_once`]), which is never kept.
    fingerprint: Option<Fingerprint>,
    last_used: u64,
}

#[derive(Default)]
struct Pools {
    free: HashMap<u64, Vec<Slot>>,
    clock: u64,
}

static POOLS: PerProcess<Pools> = PerProcess::new();

/// This process's slots (a forked child's are its own, see [`crate::per_process`]); the
/// process that makes them removes its free ones at a normal exit.
fn pools() -> MutexGuard<'static, Pools> {
    POOLS.lock(remove_at_exit)
}

/// At a normal exit of the process that owns the registry: every free slot's directory goes.
extern "C" fn remove_free_slots() {
    // A thread that holds the lock at exit keeps its slots (their directories are left).
    let Some(mut pools) = POOLS.try_lock_own() else {
        return;
    };
    let slots: Vec<Slot> = pools.free.drain().flat_map(|(_, v)| v).collect();
    drop(pools);
    for slot in slots {
        slot.scratch.remove();
    }
}

fn remove_at_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a handler that only takes this module's slots out and removes them.
    ONCE.call_once(|| unsafe {
        libc::atexit(remove_free_slots);
    });
}

/// A slot leased for one run; goes back to its policy's free slots when dropped (see the
/// module docs).
pub(crate) struct Lease {
    key: u64,
    owner: u32,
    slot: Option<Slot>,
    reusable: bool,
}

impl Lease {
    /// The scratch directory (canonical).
    pub(crate) fn dir(&self) -> &Path {
        &self.slot.as_ref().expect("leased").scratch.path
    }

    /// The ruleset for the run's command.
    pub(crate) fn ruleset(&self) -> BorrowedFd<'_> {
        self.slot.as_ref().expect("leased").ruleset.as_fd()
    }

    /// The run's end was not seen (its processes may live on): never reuse the slot.
    pub(crate) fn taint(&mut self) {
        self.reusable = false;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(mut slot) = self.slot.take() else {
            return;
        };
        if self.owner != std::process::id() {
            // A copy in a forked child: the directory is the parent's, never touched here.
            return;
        }
        let clean = self.reusable
            && slot.scratch.as_made()
            && slot
                .scratch
                .mode_in_place()
                .is_some_and(|mode| slot.scratch.empty(Some(mode)).is_ok())
            && slot.scratch.in_place();
        if !clean {
            slot.scratch.remove();
            return;
        }
        let mut evicted = Vec::new();
        {
            let mut pools = pools();
            pools.clock += 1;
            slot.last_used = pools.clock;
            let list = pools.free.entry(self.key).or_default();
            list.push(slot);
            if list.len() > PER_POLICY {
                // The most recent are at the end.
                evicted.push(list.remove(0));
            }
            while pools.free.values().map(Vec::len).sum::<usize>() > TOTAL {
                let oldest = pools
                    .free
                    .iter()
                    .filter_map(|(k, v)| v.first().map(|s| (s.last_used, *k)))
                    .min();
                let Some((_, k)) = oldest else { break };
                let list = pools.free.get_mut(&k).expect("present");
                evicted.push(list.remove(0));
                if list.is_empty() {
                    pools.free.remove(&k);
                }
            }
        }
        for slot in evicted {
            slot.scratch.remove();
        }
    }
}

/// The spec of `spec`'s rules plus the scratch directory (read, write, and execute when the
/// policy lets the command execute files).
fn with_scratch(spec: &LandlockSpec, scratch: &Path, exec: bool) -> LandlockSpec {
    let mut full = LandlockSpec {
        paths: Vec::with_capacity(spec.paths.len() + 1),
        ..spec.clone()
    };
    full.paths.extend(spec.paths.iter().cloned());
    full.paths.push(PathRule {
        path: scratch.to_path_buf(),
        read: true,
        write: true,
        exec,
        optional: false,
    });
    full
}

/// Leases a slot of the policy `key` (one per prepared policy), whose rules are `spec`, with
/// its scratch directory executable when `exec`. See the module docs.
///
/// # Errors
///
/// No scratch directory could be made, or the ruleset could not be built (a rule path that
/// must exist is missing): the run is refused.
pub(crate) fn lease(key: u64, spec: &LandlockSpec, exec: bool) -> Result<Lease, String> {
    let owner = std::process::id();
    let base = crate::scratch::temp_dir_now();
    let reused = loop {
        let Some(slot) = pools().free.get_mut(&key).and_then(Vec::pop) else {
            break None;
        };
        if slot.scratch.in_place() && slot.scratch.made_in(base) {
            break Some(slot);
        }
        // Moved away or replaced between runs: never followed, never reused. Or made in
        // another temporary directory than the one the agent names now (it changed
        // `$TMPDIR`): a new run's goes where a fresh run's would.
        slot.scratch.remove();
    };
    let slot = match reused {
        Some(mut slot) => {
            if !slot.fingerprint.as_ref().is_some_and(Fingerprint::holds) {
                match crate::landlock_rules::build_fd(&with_scratch(spec, &slot.scratch.path, exec))
                {
                    Ok((ruleset, fingerprint)) => {
                        slot.ruleset = ruleset;
                        slot.fingerprint = Some(fingerprint);
                    }
                    Err(e) => {
                        slot.scratch.remove();
                        return Err(e);
                    }
                }
            }
            slot
        }
        None => {
            let scratch = Scratch::create()?;
            match crate::landlock_rules::build_fd(&with_scratch(spec, &scratch.path, exec)) {
                Ok((ruleset, fingerprint)) => Slot {
                    scratch,
                    ruleset,
                    fingerprint: Some(fingerprint),
                    last_used: 0,
                },
                Err(e) => {
                    scratch.remove();
                    return Err(e);
                }
            }
        }
    };
    Ok(Lease {
        key,
        owner,
        slot: Some(slot),
        reusable: true,
    })
}

/// A slot for the process's only run ([`crate::runner::RunOptions::one_shot`]): a new scratch
/// directory and the ruleset of `spec` with it, removed when the lease drops. Nothing is
/// recorded for a later run: no [`Fingerprint`] (its inotify watches on every rule path and
/// ancestor cost about a fifth of a plain spawn, for a check that would never come).
///
/// # Errors
///
/// As [`lease`].
pub(crate) fn lease_once(spec: &LandlockSpec, exec: bool) -> Result<Lease, String> {
    let scratch = Scratch::create()?;
    match crate::landlock_rules::build_fd_once(&with_scratch(spec, &scratch.path, exec)) {
        Ok(ruleset) => Ok(Lease {
            key: 0,
            owner: std::process::id(),
            slot: Some(Slot {
                scratch,
                ruleset,
                fingerprint: None,
                last_used: 0,
            }),
            reusable: false,
        }),
        Err(e) => {
            scratch.remove();
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free_in(key: u64) -> usize {
        pools().free.get(&key).map_or(0, Vec::len)
    }

    /// A spec of no rules at this kernel's ABI; `None` (said why) without Landlock.
    fn no_rules() -> Option<LandlockSpec> {
        if crate::hostcaps::landlock_abi() < 1 {
            crate::test_kernel::missing("no Landlock");
            return None;
        }
        Some(LandlockSpec {
            abi: crate::landlock_rules::negotiated_abi(crate::hostcaps::landlock_abi()),
            ..LandlockSpec::default()
        })
    }

    /// One test, since the slots are the process's: the per-policy bound, then the total.
    #[test]
    fn free_slots_are_bounded_per_policy_and_in_all_least_recently_used_first() {
        let Some(spec) = no_rules() else {
            return;
        };
        let base = 1 << 40;
        let leases: Vec<Lease> = (0..PER_POLICY + 2)
            .map(|_| lease(base, &spec, false).unwrap())
            .collect();
        let dirs: Vec<_> = leases.iter().map(|l| l.dir().to_path_buf()).collect();
        let distinct: std::collections::HashSet<_> = dirs.iter().collect();
        assert_eq!(distinct.len(), dirs.len(), "leases at once share nothing");
        drop(leases);
        assert_eq!(free_in(base), PER_POLICY);
        // The first two returned were the least recently used: dropped, directories removed.
        assert!(!dirs[0].exists() && !dirs[1].exists());
        assert!(dirs[2..].iter().all(|d| d.is_dir()));

        let others: Vec<Lease> = (1..=TOTAL as u64)
            .map(|k| lease(base + k, &spec, false).unwrap())
            .collect();
        drop(others);
        let total: usize = pools().free.values().map(Vec::len).sum();
        assert_eq!(total, TOTAL);
        assert_eq!(free_in(base), 0, "the oldest policy's slots went first");
        assert!(dirs.iter().all(|d| !d.exists()));
    }

    /// A slot for one run is not kept: its directory goes when the lease drops, and it is in
    /// no policy's free slots.
    #[test]
    fn a_slot_for_one_run_is_removed_after_it() {
        let Some(spec) = no_rules() else {
            return;
        };
        let once = lease_once(&spec, false).unwrap();
        let dir = once.dir().to_path_buf();
        assert!(dir.is_dir());
        drop(once);
        assert!(!dir.exists(), "{} was kept", dir.display());
        // Other tests of this process lease at the same time: only this slot is looked for.
        assert!(pools()
            .free
            .values()
            .flatten()
            .all(|s| s.scratch.path != dir));
    }

    /// What a lease and its return cost a run in the agent, for a policy of `n` read roots:
    /// `cargo test -p sandbox --lib lease_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn lease_cost() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        for n in [1usize, 20, 500] {
            let paths = (0..n)
                .map(|i| {
                    let path = base.join(format!("{n}-{i}"));
                    std::fs::create_dir(&path).unwrap();
                    PathRule {
                        path,
                        read: true,
                        write: false,
                        exec: false,
                        optional: true,
                    }
                })
                .collect();
            let spec = LandlockSpec {
                abi: crate::landlock_rules::negotiated_abi(crate::hostcaps::landlock_abi()),
                paths,
                ..LandlockSpec::default()
            };
            let key = (2 << 40) + n as u64;
            let t = std::time::Instant::now();
            drop(lease(key, &spec, false).unwrap());
            let first = t.elapsed();
            let rounds = 200;
            let t = std::time::Instant::now();
            for _ in 0..rounds {
                drop(lease(key, &spec, false).unwrap());
            }
            println!(
                "{n} roots: first lease (directory made, ruleset built) {:.0} µs, then lease + \
                 return {:.1} µs",
                first.as_secs_f64() * 1e6,
                t.elapsed().as_secs_f64() * 1e6 / rounds as f64
            );
        }
    }
}
