//! Per-run cgroups: the pids limit (`limits.max_processes` for root runners) and the memory
//! limit of the whole tree (`limits.memory_bytes`, tmpfs and shared memory included).
//!
//! Each run gets its own cgroup per controller, named `toolpolicy-<runner pid>-<n>` (unique
//! among concurrent runs of every process), created under the directory
//! [`crate::hostcaps::HostSupport`] found, and removed when the run ends. The process that
//! becomes the root of the tool's tree joins it before it confines itself: the strict child
//! right after `clone`, the hardened command's process before it confines itself (so the
//! zygote's own memory and pid count nothing against the tool's limits).
//!
//! A limit the runner was asked for and cannot set refuses the run: nothing starts with less
//! confinement than the report says.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::hostcaps::CgroupParent;

static CGROUP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// One run's cgroup of one controller; removed on drop.
#[derive(Debug)]
pub(crate) struct RunCgroup(PathBuf);

impl RunCgroup {
    /// The directory, whose `cgroup.procs` the tree's root joins.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// A new cgroup under `parent`. A name can be left over from an earlier process with the
    /// same pid that was killed before it cleaned up: take the next.
    fn create(parent: &Path, what: &str) -> Result<RunCgroup, String> {
        let mut last = None;
        for _ in 0..100 {
            let n = CGROUP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let dir = parent.join(format!("toolpolicy-{}-{n}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(RunCgroup(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(dir),
                Err(e) => return Err(format!("creating {what} cgroup {}: {e}", dir.display())),
            }
        }
        Err(format!(
            "creating a {what} cgroup: 100 names up to {} are taken",
            last.map_or_else(String::new, |d| d.display().to_string())
        ))
    }

    fn set(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.0.join(file);
        std::fs::write(&path, value).map_err(|e| format!("setting {}: {e}", path.display()))
    }

    /// A pids cgroup whose tree may hold at most `max` processes and threads.
    pub fn pids(parent: &CgroupParent, max: u64) -> Result<RunCgroup, String> {
        let cg = RunCgroup::create(&parent.parent, "pids")?;
        cg.set("pids.max", &max.to_string())?;
        Ok(cg)
    }

    /// A memory cgroup whose tree may use at most `bytes` of memory, swap included: anonymous
    /// memory, page cache, tmpfs and shared memory pages, kernel memory. At the limit the
    /// kernel reclaims what it can and then kills a process of the tree (OOM).
    pub fn memory(parent: &CgroupParent, bytes: u64) -> Result<RunCgroup, String> {
        let cg = RunCgroup::create(&parent.parent, "memory")?;
        let value = bytes.to_string();
        if parent.v2 {
            cg.set("memory.max", &value)?;
            // Without this, pages pushed out to swap would no longer count.
            if cg.0.join("memory.swap.max").exists() {
                cg.set("memory.swap.max", "0")?;
            }
            // One OOM kill ends the whole tree, not one worker of it.
            let _ = cg.set("memory.oom.group", "1");
        } else {
            cg.set("memory.limit_in_bytes", &value)?;
            // memsw (memory + swap) must not be lower than the memory limit: set it after.
            if cg.0.join("memory.memsw.limit_in_bytes").exists() {
                cg.set("memory.memsw.limit_in_bytes", &value)?;
            }
        }
        Ok(cg)
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        // The tree is dead when this runs, but the kernel may take a moment to release the
        // last task (and, for memory, the pages of the tree's tmpfs).
        for _ in 0..400 {
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Whether swap could hold pages a memory cgroup does not count: a v1 hierarchy without
/// swap accounting (`memory.memsw.*`) on a host with swap.
pub(crate) fn swap_escapes(parent: &CgroupParent) -> bool {
    if parent.v2 {
        return false;
    }
    let accounted = parent.parent.join("memory.memsw.limit_in_bytes").exists();
    let has_swap = std::fs::read_to_string("/proc/swaps")
        .map(|s| s.lines().count() > 1)
        .unwrap_or(false);
    !accounted && has_swap
}

/// Moves the calling process into each cgroup (`"0"` names the writer, whatever its pid in
/// whichever namespace). Its children are born there.
pub(crate) fn join(cgroups: &[PathBuf]) -> Result<(), String> {
    for cgroup in cgroups {
        let procs = cgroup.join("cgroup.procs");
        std::fs::write(&procs, "0")
            .map_err(|e| format!("joining cgroup {}: {e}", procs.display()))?;
    }
    Ok(())
}
