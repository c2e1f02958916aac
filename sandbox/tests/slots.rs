//! The hardened profile's scratch slots (`sandbox/src/slots.rs`): a Landlock ruleset and a
//! scratch directory kept per policy and reused run after run. Every case runs real hardened
//! runs in a process of its own (the slots are per process): a cached ruleset must grant
//! exactly what a fresh one would after the roots changed on disk, the scratch directory must
//! be empty, private to one run at a time and to one process, cleaned without following what
//! the tool put in its place, and gone after the process exits.

#[path = "support/cases.rs"]
mod cases;
#[path = "support/kernel.rs"]
mod kernel;
#[path = "support/mounts.rs"]
mod mounts;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use policy_runtime::ToolPolicy;
use sandbox::runner::{run, RunOptions, RunOutput};
use sandbox::Profile;

const HELPER: &str = env!("CARGO_BIN_EXE_policy-sandbox");
const CASE_VAR: &str = "SLOTS_CASE";
const DIR_VAR: &str = "SLOTS_DIR";

use cases::{check, Case};
use mounts::mount;

const CASES: &[(&str, Case)] = &[
    (
        "a_root_renamed_away_and_recreated_is_the_new_one_and_the_old_is_unreachable",
        root_renamed_and_recreated,
    ),
    (
        "a_root_replaced_by_a_symlink_is_not_served_from_the_cached_ruleset",
        root_replaced_by_a_symlink,
    ),
    (
        "a_directory_mounted_over_a_root_between_runs_is_what_the_next_run_sees",
        mounted_over_a_root,
    ),
    (
        "a_slot_kept_in_one_mount_namespace_is_not_served_in_another",
        slot_of_another_mount_namespace,
    ),
    (
        "a_mount_in_a_namespace_a_thread_entered_is_what_its_next_run_sees",
        mount_in_a_threads_own_namespace,
    ),
    (
        "a_plan_prepared_in_one_mount_namespace_grants_nothing_through_a_symlink_at_its_root_in_another",
        plan_of_another_mount_namespace,
    ),
    (
        "a_file_left_in_tmpdir_is_gone_in_the_next_run_of_the_policy",
        tmpdir_is_emptied,
    ),
    (
        "a_scratch_directory_opened_to_everyone_during_a_run_is_lent_again_only_as_its_owners",
        tmpdir_mode_is_reset,
    ),
    (
        "a_scratch_directory_given_an_attribute_or_a_flag_during_a_run_is_not_lent_again",
        tmpdir_marks_drop_the_slot,
    ),
    (
        "a_mark_a_command_left_on_its_scratch_directory_is_not_the_next_runs",
        tmpdir_marks_from_inside,
    ),
    (
        "a_scratch_directory_swapped_for_a_symlink_leaves_the_victim_untouched",
        scratch_swapped_for_a_symlink,
    ),
    (
        "two_concurrent_runs_of_one_policy_get_different_scratch_directories",
        concurrent_runs,
    ),
    (
        "a_run_whose_end_was_not_seen_never_gives_its_slot_back",
        run_end_not_seen,
    ),
    (
        "a_forked_child_does_not_lease_the_parents_slots",
        forked_child,
    ),
    ("a_normal_exit_leaves_no_scratch_directory", normal_exit),
    (
        "a_run_after_the_agent_changed_tmpdir_gets_its_scratch_directory_there",
        tmpdir_follows_the_agent,
    ),
    (
        "a_killed_agents_scratch_directory_is_removed_by_the_next_agent_and_nothing_else_is",
        killed_agents_litter,
    ),
];

/// Not a test: the agent process [`normal_exit`] starts.
const AGENT_ROLE: &str = "agent_role";
/// Not a test: an agent of [`killed_agents_litter`] that runs once and then waits to be killed.
const HOLD_ROLE: &str = "hold_role";

fn main() -> ExitCode {
    let roles: &[(&str, Case)] = &[(AGENT_ROLE, agent_role), (HOLD_ROLE, hold_role)];
    cases::main_one_process_each(CASE_VAR, DIR_VAR, CASES, roles, || {
        kernel::supports(Profile::Hardened)
    })
}

// ---- helpers of the case processes ----

fn canonical(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).expect("canonical case directory")
}

fn policy(json: &str) -> ToolPolicy {
    ToolPolicy::from_json_str("case", json).expect("valid policy")
}

/// A policy that reads each of `roots` and everything below it.
fn reading(roots: &[impl AsRef<Path>]) -> ToolPolicy {
    let list: Vec<String> = roots
        .iter()
        .map(|r| format!("\"{}/**\"", r.as_ref().display()))
        .collect();
    policy(&format!(r#"{{"fs": {{"read": [{}]}}}}"#, list.join(", ")))
}

/// Runs `script` under `policy` and checks that it succeeds and prints `want` (`what` says
/// which run expects it).
fn prints(policy: &ToolPolicy, script: &str, want: &str, what: &str) -> Result<(), String> {
    let out = sh(policy, script)?;
    check(
        &format!("{what}: {}", show(&out)),
        out.success() && stdout(&out) == want,
    )
}

fn sh(policy: &ToolPolicy, script: &str) -> Result<RunOutput, String> {
    let argv: Vec<OsString> = vec!["/bin/sh".into(), "-c".into(), script.into()];
    let opts = RunOptions::default()
        .helper(HELPER)
        .profile(Profile::Hardened);
    run(policy, &argv, &opts).map_err(|e| e.to_string())
}

/// A run's outcome, short, for failure messages.
fn show(out: &RunOutput) -> String {
    format!(
        "exit {:?}, stdout {:?}, stderr {:?}",
        out.code,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stdout(out: &RunOutput) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The `$TMPDIR` a run of `policy` sees.
fn tmpdir_of(policy: &ToolPolicy) -> Result<String, String> {
    let out = sh(policy, "echo $TMPDIR")?;
    check(&format!("echo $TMPDIR: {}", show(&out)), out.success())?;
    Ok(stdout(&out))
}

/// Makes this case process's temporary directory `dir/tmp` (read by every later scratch
/// directory made in it). The case processes are single-threaded when they call it.
fn private_tmp(dir: &Path) -> PathBuf {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    std::env::set_var("TMPDIR", &tmp);
    tmp
}

fn scratch_dirs_in(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("toolpolicy-scratch-"))
                .collect()
        })
        .unwrap_or_default()
}

// ---- cases ----

/// Run 1 caches a ruleset whose rule holds the root's inode. The root is then renamed out of
/// the policy and a new directory made at its path: run 2 must see the new one, and must not
/// reach the old one at its new place (a stale rule would still grant it).
fn root_renamed_and_recreated(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    let root = dir.join("root");
    std::fs::create_dir(&root).map_err(|e| e.to_string())?;
    std::fs::write(root.join("marker"), "old").map_err(|e| e.to_string())?;
    let p = policy(&format!(
        r#"{{"fs": {{"write": ["{}/**"]}}}}"#,
        root.display()
    ));
    let first = sh(
        &p,
        &format!("cat {0}/marker && echo w > {0}/w1", root.display()),
    )?;
    check(
        &format!("run 1 reads and writes its root: {}", show(&first)),
        first.success() && stdout(&first) == "old",
    )?;
    let old = dir.join("old");
    std::fs::rename(&root, &old).map_err(|e| e.to_string())?;
    std::fs::create_dir(&root).map_err(|e| e.to_string())?;
    std::fs::write(root.join("marker"), "new").map_err(|e| e.to_string())?;

    let new = sh(
        &p,
        &format!("cat {0}/marker && echo w > {0}/w2", root.display()),
    )?;
    check(
        &format!("run 2 reads and writes the new root: {}", show(&new)),
        new.success() && stdout(&new) == "new" && root.join("w2").exists(),
    )?;
    let read_old = sh(&p, &format!("cat {}/marker", old.display()))?;
    check(
        &format!(
            "run 2 cannot read the old root at its new place: {}",
            show(&read_old)
        ),
        !read_old.success() && !stdout(&read_old).contains("old"),
    )?;
    let write_old = sh(&p, &format!("echo w > {}/w3", old.display()))?;
    check(
        &format!(
            "run 2 cannot write the old root at its new place: {}",
            show(&write_old)
        ),
        !write_old.success() && !old.join("w3").exists(),
    )
}

/// Run 1 caches a ruleset for a read root. The root is then moved away, its file rewritten
/// as a secret, and a symlink to it left at the root's path. A fresh ruleset makes no rule for
/// a path that resolves through a link (so the secret is not readable by either name); the
/// cached one, whose rule holds the moved directory, must not be used.
fn root_replaced_by_a_symlink(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    let root = dir.join("root");
    std::fs::create_dir(&root).map_err(|e| e.to_string())?;
    std::fs::write(root.join("f"), "public").map_err(|e| e.to_string())?;
    let p = reading(&[&root]);
    prints(
        &p,
        &format!("cat {}/f", root.display()),
        "public",
        "run 1 reads its root",
    )?;
    let secret = dir.join("secret");
    std::fs::rename(&root, &secret).map_err(|e| e.to_string())?;
    std::fs::write(secret.join("f"), "secret").map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(&secret, &root).map_err(|e| e.to_string())?;

    for path in [root.join("f"), secret.join("f")] {
        let out = sh(&p, &format!("cat {}", path.display()))?;
        check(
            &format!("run 2 cannot read {}: {}", path.display(), show(&out)),
            !out.success() && !stdout(&out).contains("secret"),
        )?;
    }
    Ok(())
}

/// Run 1 caches a ruleset for a read root among many siblings; then, in this case's own mount
/// namespace, another directory is bind-mounted over the root. A fresh ruleset's rule names
/// the mounted directory (what the path shows now), so run 2 reads the mounted file.
/// Moves this case process into a mount namespace of its own, private all through, so nothing
/// it mounts reaches the host; false (with the reason printed, or a failure where the kernel
/// must serve) when it cannot.
fn private_mount_namespace() -> bool {
    // SAFETY: this case process is single-threaded; unshare and mount take plain arguments.
    let private = unsafe {
        libc::unshare(libc::CLONE_NEWNS) == 0
            && libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) == 0
    };
    if !private {
        kernel::missing(&format!(
            "a mount namespace of its own for this case: {}",
            std::io::Error::last_os_error()
        ));
    }
    private
}

fn mounted_over_a_root(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    if !private_mount_namespace() {
        return Ok(());
    }
    let roots = dir.join("roots");
    let names: Vec<PathBuf> = (0..40).map(|i| roots.join(format!("r{i:02}"))).collect();
    for n in &names {
        std::fs::create_dir_all(n).map_err(|e| e.to_string())?;
    }
    let root = &names[7];
    std::fs::write(root.join("f"), "covered").map_err(|e| e.to_string())?;
    let p = reading(&names);
    prints(
        &p,
        &format!("cat {}/f", root.display()),
        "covered",
        "run 1 reads the root",
    )?;
    let other = dir.join("other");
    std::fs::create_dir(&other).map_err(|e| e.to_string())?;
    std::fs::write(other.join("f"), "mounted").map_err(|e| e.to_string())?;
    mount(&other.to_string_lossy(), root, "", libc::MS_BIND)?;
    // A stale rule (on the covered directory) would make this EACCES.
    prints(
        &p,
        &format!("cat {}/f", root.display()),
        "mounted",
        "run 2 reads what is mounted there now",
    )
}

/// A ruleset kept from a run in one mount namespace is not served in another. A rule holds an
/// inode, which Landlock finds by any path that leads to it: here a root `view` is a bind of
/// `real`, so a run reads `real/secret` too. The agent then enters a mount namespace of its own
/// and hides `view` under a tmpfs: a fresh build there makes the rule on the tmpfs, and
/// `real/secret` is refused; a ruleset kept from before would still hold `real`'s inode. Root
/// only.
fn slot_of_another_mount_namespace(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    if !private_mount_namespace() {
        return Ok(());
    }
    let (real, view, extra) = (dir.join("real"), dir.join("view"), dir.join("extra"));
    for d in [&real, &view, &extra] {
        std::fs::create_dir(d).map_err(|e| e.to_string())?;
    }
    std::fs::write(real.join("secret"), "secret").map_err(|e| e.to_string())?;
    mount(&real.to_string_lossy(), &view, "", libc::MS_BIND)?;
    let p = reading(&[&view]);
    let cat = format!("cat {}/secret", real.display());
    prints(
        &p,
        &cat,
        "secret",
        "run 1 reads the root's inode by its other path",
    )?;
    if !private_mount_namespace() {
        return Ok(());
    }
    mount("none", &view, "tmpfs", 0)?;
    // The control: a policy with the same root and one more, so a slot of its own, built here.
    let fresh = sh(&reading(&[&view, &extra]), &cat)?;
    check(
        &format!("a fresh build here refuses it: {}", show(&fresh)),
        !fresh.success(),
    )?;
    let second = sh(&p, &cat)?;
    check(
        &format!("the kept slot refuses it too: {}", show(&second)),
        !second.success(),
    )
}

/// A mount made over a root in a mount namespace that a thread of the agent entered after its
/// first run (the first thread stays in the first namespace) is what that thread's next run
/// sees: the check of its kept ruleset watches its own namespace's mount table, not the first
/// thread's. Root only.
fn mount_in_a_threads_own_namespace(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    if !private_mount_namespace() {
        return Ok(());
    }
    // A first run in the first thread's namespace, which starts following its mount table.
    let first = sh(&policy(r#"{"net": "deny"}"#), "true")?;
    check(&format!("a first run: {}", show(&first)), first.success())?;
    let roots = dir.join("roots");
    let names: Vec<PathBuf> = (0..40).map(|i| roots.join(format!("r{i:02}"))).collect();
    for n in &names {
        std::fs::create_dir_all(n).map_err(|e| e.to_string())?;
    }
    let root = names[7].clone();
    std::fs::write(root.join("f"), "covered").map_err(|e| e.to_string())?;
    let other = dir.join("other");
    std::fs::create_dir(&other).map_err(|e| e.to_string())?;
    std::fs::write(other.join("f"), "mounted").map_err(|e| e.to_string())?;
    let p = reading(&names);
    std::thread::spawn(move || -> Result<(), String> {
        if !private_mount_namespace() {
            return Ok(());
        }
        let cat = format!("cat {}/f", root.display());
        prints(&p, &cat, "covered", "the thread's run 1 reads the root")?;
        mount(&other.to_string_lossy(), &root, "", libc::MS_BIND)?;
        // A stale rule (on the covered directory) would make this EACCES.
        prints(
            &p,
            &cat,
            "mounted",
            "the thread's run 2 reads what it mounted there",
        )
    })
    .join()
    .map_err(|_| "the thread panicked".to_string())?
}

/// What `cat path` prints in a `profile` run of `policy`: `Ok(None)` when the command ran and
/// failed, `Err` with the reason when the run was refused.
fn cat_in(profile: Profile, policy: &ToolPolicy, path: &Path) -> Result<Option<String>, String> {
    let argv: Vec<OsString> = vec!["/bin/cat".into(), path.into()];
    let opts = RunOptions::default().helper(HELPER).profile(profile);
    let out = run(policy, &argv, &opts).map_err(|e| e.to_string())?;
    Ok(out.success().then(|| stdout(&out)))
}

/// A prepared plan is kept per process and policy, not per mount namespace: it fixes, in the
/// namespace of its first run, that a root is written canonically (a declared root that
/// resolves through a symlink is refused). The agent then enters a mount namespace of its
/// own, where the root's parent is a tmpfs and the root a symlink to a secret directory. A
/// fresh plan there is refused (the control: a policy with one more root, so a plan of its
/// own); the kept plan must grant the secret by neither path, in either profile: its rules and
/// binds are made again in the running thread's namespace, without following a link. Root
/// only.
fn plan_of_another_mount_namespace(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    if !private_mount_namespace() {
        return Ok(());
    }
    let (top, secret, extra) = (dir.join("top"), dir.join("secret"), dir.join("extra"));
    let root = top.join("root");
    for d in [&root, &secret, &extra] {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    std::fs::write(root.join("f"), "public").map_err(|e| e.to_string())?;
    std::fs::write(secret.join("f"), "secret").map_err(|e| e.to_string())?;
    let p = reading(&[&root]);
    let mut profiles = vec![Profile::Hardened];
    if kernel::supports(Profile::Strict) {
        profiles.push(Profile::Strict);
    }
    for &profile in &profiles {
        let first = cat_in(profile, &p, &root.join("f"));
        check(
            &format!("{profile:?} run 1 reads its root: {first:?}"),
            first.as_ref().is_ok_and(|f| f.as_deref() == Some("public")),
        )?;
    }
    if !private_mount_namespace() {
        return Ok(());
    }
    mount("none", &top, "tmpfs", 0)?;
    std::os::unix::fs::symlink(&secret, &root).map_err(|e| e.to_string())?;
    let unconfined = std::fs::read_to_string(root.join("f")).map_err(|e| e.to_string())?;
    check(
        "the root's path leads to the secret here",
        unconfined == "secret",
    )?;
    for &profile in &profiles {
        let fresh = run(
            &reading(&[&root, &extra]),
            &["/bin/cat".into(), root.join("f").into()],
            &RunOptions::default().helper(HELPER).profile(profile),
        );
        let fresh = fresh.map(|out| show(&out)).map_err(|e| e.to_string());
        check(
            &format!("{profile:?}: a fresh plan here is refused: {fresh:?}"),
            fresh.as_ref().is_err_and(|e| e.contains("symlink")),
        )?;
        for path in [root.join("f"), secret.join("f")] {
            let seen = cat_in(profile, &p, &path);
            check(
                &format!(
                    "{profile:?}: the kept plan reads {}: {seen:?}",
                    path.display()
                ),
                // Refused for the link (a fresh check of its binds), or run and refused by
                // the kernel: never read, and never refused for another reason that would
                // leave the question untried.
                matches!(seen, Ok(None)) || seen.as_ref().is_err_and(|e| e.contains("symlink")),
            )?;
        }
    }
    Ok(())
}

/// Starts `script` under `p` on a thread of its own, and returns once the script has made
/// `marker` (or after 20 s).
fn started(
    p: &ToolPolicy,
    script: String,
    marker: &Path,
) -> std::thread::JoinHandle<Result<RunOutput, String>> {
    let run = {
        let p = p.clone();
        std::thread::spawn(move || sh(&p, &script))
    };
    let start = std::time::Instant::now();
    while !marker.exists() && start.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    run
}

/// Runs `first` under `p`, then `change` in this process while the run waits, then lets the
/// run end: what `change` returned, and the run.
fn during_a_run<T>(
    p: &ToolPolicy,
    dir: &Path,
    first: &str,
    change: impl FnOnce() -> T,
) -> Result<(T, RunOutput), String> {
    let (go, left) = (dir.join("go"), dir.join("left"));
    let _ = (std::fs::remove_file(&go), std::fs::remove_file(&left));
    let script = format!(
        "{first}echo > {left} && while [ ! -e {go} ]; do sleep 0.02; done",
        left = left.display(),
        go = go.display()
    );
    let run = started(p, script, &left);
    let changed = change();
    std::fs::write(&go, "").map_err(|e| e.to_string())?;
    let ran = run.join().map_err(|_| "the run's thread panicked")??;
    Ok((changed, ran))
}

/// What a run leaves in its `$TMPDIR` (a file, a tree, a link) is gone when the next run of
/// the same policy gets the same directory back.
fn tmpdir_is_emptied(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    let p = reading(&[&dir]);
    let first = sh(
        &p,
        "echo left > $TMPDIR/left && mkdir -p $TMPDIR/d/e && echo x > $TMPDIR/d/e/f && \
         ln -s / $TMPDIR/link && echo $TMPDIR",
    )?;
    check(
        &format!("run 1 fills its TMPDIR: {}", show(&first)),
        first.success(),
    )?;
    let second = sh(&p, "ls -A $TMPDIR; echo $TMPDIR; echo data > $TMPDIR/again")?;
    let lines: Vec<String> = stdout(&second).lines().map(str::to_string).collect();
    check(
        &format!(
            "run 2 reuses the directory, empty and writable: {}",
            show(&second)
        ),
        second.success() && lines == [stdout(&first)],
    )
}

/// A scratch directory whose mode changed during a run (to 1777, open to every local user,
/// or to 0) is handed back as it was made: the next run of the policy gets the same directory,
/// empty and with mode 0700, where no other user can have put anything meanwhile. The mode is
/// changed from outside, by this process: a root runner's command may not `chmod` at all, and
/// another runner's may, in its own scratch directory.
fn tmpdir_mode_is_reset(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let dir = canonical(dir);
    let p = policy(&format!(
        r#"{{"fs": {{"write": ["{}/**"]}}}}"#,
        dir.display()
    ));
    let first = sh(&p, "stat -c %a $TMPDIR; echo $TMPDIR")?;
    let mut lines = stdout(&first)
        .lines()
        .map(str::to_string)
        .collect::<Vec<_>>();
    check(
        &format!("run 1's TMPDIR is its owner's alone: {}", show(&first)),
        first.success() && lines.first().map(String::as_str) == Some("700"),
    )?;
    let tmpdir = lines.pop().unwrap_or_default();
    for mode in [0o1777, 0] {
        let (changed, ran) = during_a_run(&p, &dir, "echo x > $TMPDIR/f && ", || {
            std::fs::set_permissions(&tmpdir, std::fs::Permissions::from_mode(mode))
        })?;
        changed.map_err(|e| format!("chmod {mode:o} {tmpdir}: {e}"))?;
        check(
            &format!("the run under mode {mode:o} ended: {}", show(&ran)),
            ran.success(),
        )?;
        let next = sh(&p, "stat -c %a $TMPDIR; ls -A $TMPDIR; echo $TMPDIR")?;
        check(
            &format!(
                "after mode {mode:o}, the next run has it back, 700 and empty: {}",
                show(&next)
            ),
            next.success() && stdout(&next) == format!("700\n{tmpdir}"),
        )?;
    }
    Ok(())
}

/// The inode flag `chattr +d` sets (no dump), one a directory's owner may set.
const FS_NODUMP_FL: libc::c_int = 0x40;

/// A mark left on the scratch directory itself, which emptying it does not remove: an extended
/// attribute (`user.left`, data a later run could read back) or an inode flag (`chattr +d`).
#[derive(Clone, Copy, Debug)]
enum Mark {
    Xattr,
    NoDumpFlag,
}

impl Mark {
    /// Puts it on `dir`; `Ok(false)` where the file system has no such mark.
    fn put(self, dir: &Path) -> Result<bool, String> {
        let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|e| e.to_string())?;
        let failed = |what: &str| {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ENOTSUP | libc::ENOTTY) => Ok(false),
                _ => Err(format!("{what} on {}: {e}", dir.display())),
            }
        };
        match self {
            Mark::Xattr => {
                let value = b"secret of run 1";
                // SAFETY: a NUL-terminated path and name, and a value of the length given.
                let r = unsafe {
                    libc::setxattr(
                        c.as_ptr(),
                        c"user.left".as_ptr(),
                        value.as_ptr().cast(),
                        value.len(),
                        0,
                    )
                };
                if r != 0 {
                    return failed("setxattr user.left");
                }
            }
            Mark::NoDumpFlag => {
                let file = std::fs::File::open(dir).map_err(|e| e.to_string())?;
                let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
                let mut flags: libc::c_int = 0;
                // SAFETY: FS_IOC_GETFLAGS and SETFLAGS read or write one int.
                if unsafe { libc::ioctl(fd, libc::FS_IOC_GETFLAGS, &mut flags) } != 0 {
                    return failed("FS_IOC_GETFLAGS");
                }
                flags |= FS_NODUMP_FL;
                // SAFETY: as above.
                if unsafe { libc::ioctl(fd, libc::FS_IOC_SETFLAGS, &flags) } != 0 {
                    return failed("FS_IOC_SETFLAGS");
                }
            }
        }
        Ok(true)
    }
}

/// A run during which the scratch directory itself got an extended attribute (data that a
/// later run could read back) or an inode flag, which emptying it does not take away: its slot
/// is dropped, so the next run of the policy gets a new directory without the mark, and the
/// marked one is removed. A run that leaves no mark gets the same directory back (the
/// control). The marks are put from outside, by this process, as in the mode case above.
fn tmpdir_marks_drop_the_slot(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    let p = policy(&format!(
        r#"{{"fs": {{"write": ["{}/**"]}}}}"#,
        dir.display()
    ));
    let mut tmpdir = tmpdir_of(&p)?;
    // Enough entries that ext4 indexes the directory, a flag of its own it keeps when emptied.
    let many = sh(
        &p,
        "for i in $(seq 400); do : > $TMPDIR/an_entry_with_a_longer_name_$i; done",
    )?;
    check(
        &format!("a run makes 400 files: {}", show(&many)),
        many.success(),
    )?;
    check(
        "control: a run that leaves no mark, or only many entries since removed, gets the same \
         directory back",
        tmpdir_of(&p)? == tmpdir,
    )?;
    for mark in [Mark::Xattr, Mark::NoDumpFlag] {
        let (put, ran) = during_a_run(&p, &dir, "", || mark.put(Path::new(&tmpdir)))?;
        check(&format!("the run ended: {}", show(&ran)), ran.success())?;
        if !put? {
            eprintln!("skipped {mark:?}: the file system of {tmpdir} has no such mark");
            continue;
        }
        let next = tmpdir_of(&p)?;
        check(
            &format!(
                "after {mark:?}, the next run gets a new directory ({next}, not {tmpdir}), and \
                 the marked one is gone"
            ),
            next != tmpdir && !Path::new(&tmpdir).exists(),
        )?;
        tmpdir = next;
    }
    Ok(())
}

/// The attack of the case above, made by the command itself: a runner that is not root, with
/// a write root, lets its command set attributes on files its uid owns, its own scratch
/// directory included. Run 1 stores data in a `user.*` attribute of its `$TMPDIR`, or sets its
/// no-dump flag (and shows the mark: the control); run 2 of the same policy sees another
/// directory, without it. As uid 65534 when this is root; skipped without `python3`, which
/// makes the calls ([`MARK_PY`]).
fn tmpdir_marks_from_inside(dir: &Path) -> Result<(), String> {
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: no /usr/bin/python3 to set an attribute from inside the run");
        return Ok(());
    }
    let dir = canonical(dir);
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).map_err(|e| e.to_string())?;
        cases::become_nobody()?;
    }
    let p = policy(&format!(
        r#"{{"fs": {{"write": ["{}/**"]}}}}"#,
        dir.display()
    ));
    let marker = dir.join("mark.py");
    std::fs::write(&marker, MARK_PY).map_err(|e| e.to_string())?;
    let script = |mark: &str| format!("/usr/bin/python3 {} {mark}", marker.display());
    for (mark, stored) in [("xattr", "['user.left'] False"), ("nodump", "[] True")] {
        let first = sh(&p, &script(mark))?;
        let lines: Vec<String> = stdout(&first).lines().map(str::to_string).collect();
        if mark == "nodump" && stdout(&first) == "refused" {
            eprintln!("note: the command may not set an inode flag on its TMPDIR here");
            continue;
        }
        check(
            &format!(
                "run 1 leaves a mark ({mark}) on its TMPDIR: {}",
                show(&first)
            ),
            first.success() && lines.len() == 2 && lines[1] == stored,
        )?;
        let second = sh(&p, &script("none"))?;
        check(
            &format!(
                "run 2 has another TMPDIR than {}, without the mark: {}",
                lines[0],
                show(&second)
            ),
            second.success()
                && !stdout(&second).starts_with(&format!("{}\n", lines[0]))
                && stdout(&second).ends_with("\n[] False"),
        )?;
    }
    Ok(())
}

/// Marks the run's `$TMPDIR` as its argument says (`xattr`, `nodump` or `none`), then prints
/// the directory and its marks: its attribute names and whether its no-dump flag is set.
/// Prints `refused` alone when the kernel refused the flag.
const MARK_PY: &str = r#"
import fcntl, os, struct, sys
d = os.environ["TMPDIR"]
def flags():
    fd = os.open(d, os.O_RDONLY)
    try:
        return struct.unpack("i", fcntl.ioctl(fd, 0x80086601, b"\0" * 4))[0]
    finally:
        os.close(fd)
if sys.argv[1] == "xattr":
    os.setxattr(d, "user.left", b"data of run 1")
elif sys.argv[1] == "nodump":
    fd = os.open(d, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, 0x40086602, struct.pack("i", flags() | 0x40))
    except OSError:
        print("refused")
        sys.exit(0)
    finally:
        os.close(fd)
print(d)
print(sorted(os.listxattr(d)), bool(flags() & 0x40))
"#;

/// The agent runs a policy with `TMPDIR=a`, then with `TMPDIR=b`, then with `a` again, which
/// it then replaces by another directory at the same path: each run's scratch directory is in
/// the temporary directory the agent names at that run (the first run, in `a`, is the
/// control), and the slot left in a directory the agent no longer names is removed.
fn tmpdir_follows_the_agent(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    let (a, b) = (dir.join("a"), dir.join("b"));
    for d in [&a, &b] {
        std::fs::create_dir(d).map_err(|e| e.to_string())?;
    }
    let p = reading(&[&dir]);
    let in_ = |tmp: &Path, seen: &str| Path::new(seen).parent() == Some(tmp);
    std::env::set_var("TMPDIR", &a);
    let first = tmpdir_of(&p)?;
    check(
        &format!("run 1's scratch is in a: {first}"),
        in_(&a, &first),
    )?;
    std::env::set_var("TMPDIR", &b);
    let second = tmpdir_of(&p)?;
    check(
        &format!("run 2's scratch is in b: {second}"),
        in_(&b, &second),
    )?;
    check(
        "the slot in a, no longer named, is gone",
        scratch_dirs_in(&a).is_empty(),
    )?;
    std::env::set_var("TMPDIR", &a);
    let third = tmpdir_of(&p)?;
    check(
        &format!("run 3's scratch is in a: {third}"),
        in_(&a, &third),
    )?;
    // The same path, another directory: the slot made in the old one is not reused.
    std::fs::rename(&a, dir.join("old-a")).map_err(|e| e.to_string())?;
    std::fs::create_dir(&a).map_err(|e| e.to_string())?;
    let fourth = tmpdir_of(&p)?;
    check(
        &format!("run 4's scratch is in the new a: {fourth}"),
        in_(&a, &fourth) && Path::new(&fourth).is_dir(),
    )
}

/// A policy that may write the scratch directory's parent lets the tool rename its scratch
/// directory away and leave a symlink to a victim directory in its place. The cleanup after
/// the run must not empty the victim through the link, and the next run gets a new directory.
fn scratch_swapped_for_a_symlink(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    let tmp = private_tmp(&dir);
    let victim = dir.join("victim");
    std::fs::create_dir(&victim).map_err(|e| e.to_string())?;
    std::fs::write(victim.join("precious"), "p").map_err(|e| e.to_string())?;
    let p = policy(&format!(
        r#"{{"fs": {{"write": ["{}/**"]}}}}"#,
        tmp.display()
    ));
    let first = sh(
        &p,
        &format!(
            "echo junk > $TMPDIR/junk && mv $TMPDIR $TMPDIR.moved && ln -s {} $TMPDIR && \
             echo $TMPDIR",
            victim.display()
        ),
    )?;
    check(
        &format!("run 1 swaps its scratch: {}", show(&first)),
        first.success(),
    )?;
    check(
        "the victim is untouched by the cleanup",
        victim.join("precious").exists(),
    )?;
    let next = tmpdir_of(&p)?;
    check(
        &format!(
            "run 2 gets a new directory ({next} after {})",
            stdout(&first)
        ),
        next != stdout(&first) && Path::new(&next).is_dir(),
    )?;
    check(
        "the victim is still untouched after run 2",
        victim.join("precious").exists(),
    )
}

fn concurrent_runs(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    let p = reading(&[&dir]);
    let script = "echo $TMPDIR; echo mine > $TMPDIR/f; sleep 0.5; cat $TMPDIR/f";
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| sh(&p, script));
        let b = s.spawn(|| sh(&p, script));
        (a.join().expect("thread"), b.join().expect("thread"))
    });
    let (a, b) = (a?, b?);
    let (la, lb) = (stdout(&a), stdout(&b));
    let first = |s: &str| s.lines().next().unwrap_or_default().to_string();
    check(
        &format!("both ran with their own scratch: {} {}", show(&a), show(&b)),
        a.success() && b.success() && first(&la) != first(&lb) && la.ends_with("mine"),
    )
}

/// The zygote killed during a run (the run fails with the helper error): its command's
/// processes may outlive the runner's return, so the slot is dropped, and the next run of the
/// policy gets another directory.
fn run_end_not_seen(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    let p = policy(&format!(
        r#"{{"fs": {{"write": ["{}/**"]}}}}"#,
        dir.display()
    ));
    let warm = tmpdir_of(&p)?;
    check(
        &format!("the slot is reused between runs that ended ({warm})"),
        tmpdir_of(&p)? == warm,
    )?;
    let zygote = sandbox::zygote::running(Path::new(HELPER)).ok_or("no zygote")?;
    let marker = dir.join("started");
    let script = format!("echo $TMPDIR > {}; sleep 30", marker.display());
    let long = started(&p, script, &marker);
    let used = std::fs::read_to_string(&marker).map_err(|e| e.to_string())?;
    check(
        &format!("the long run had the slot ({used})"),
        used.trim() == warm,
    )?;
    // SAFETY: killing the zygote this process started.
    unsafe { libc::kill(zygote as i32, libc::SIGKILL) };
    let out = long.join().map_err(|_| "the run's thread panicked")?;
    check(
        &format!(
            "the run failed with the helper error: {:?}",
            out.as_ref().err()
        ),
        out.as_ref()
            .is_err_and(|e| e.contains("ended during the run")),
    )?;
    let next = tmpdir_of(&p)?;
    check(
        &format!("the next run has another directory ({next} after {warm})"),
        next != warm,
    )
}

/// A child forked from the agent makes slots of its own, and its normal exit removes them,
/// not the parent's.
fn forked_child(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    let p = reading(&[&dir]);
    let parents = tmpdir_of(&p)?;
    let report = dir.join("child-tmpdir");
    // SAFETY: this case process is single-threaded; the child runs ordinary code and exits.
    let child = unsafe { libc::fork() };
    if child == 0 {
        let outcome = tmpdir_of(&p).and_then(|own| {
            check(
                &format!("the child's scratch {own} is not the parent's {parents}"),
                own != parents
                    && own.contains(&format!("toolpolicy-scratch-{}-", std::process::id())),
            )?;
            std::fs::write(&report, &own).map_err(|e| e.to_string())
        });
        if let Err(e) = &outcome {
            eprintln!("in the forked child: {e}");
        }
        // A normal exit: the exit handlers run (the child's slots are removed).
        std::process::exit(i32::from(outcome.is_err()));
    }
    let mut status = 0;
    // SAFETY: waiting for our child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    check(
        "the forked child's run succeeded",
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    )?;
    let childs = std::fs::read_to_string(&report).map_err(|e| e.to_string())?;
    check(
        &format!("the child's scratch {childs} went with it"),
        !Path::new(&childs).exists(),
    )?;
    check(
        "the parent's scratch is still there",
        Path::new(&parents).is_dir(),
    )?;
    let again = tmpdir_of(&p)?;
    check(
        &format!("the parent gets its slot back ({again} vs {parents})"),
        again == parents,
    )
}

/// An agent that ran hardened tools (two policies, files left behind) and exits normally
/// leaves no scratch directory.
fn normal_exit(dir: &Path) -> Result<(), String> {
    let dir = canonical(dir);
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).map_err(|e| e.to_string())?;
    let out = cases::process_of(CASE_VAR, DIR_VAR, AGENT_ROLE, &dir)
        .env("TMPDIR", &tmp)
        .output()
        .map_err(|e| e.to_string())?;
    check(
        &format!(
            "the agent ran: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        out.status.success(),
    )?;
    let made = std::fs::read_to_string(dir.join("made")).map_err(|e| e.to_string())?;
    check(
        &format!(
            "the agent's runs used scratch directories in {}: {made}",
            tmp.display()
        ),
        made.lines().count() == 2 && made.lines().all(|l| l.starts_with(&*tmp.to_string_lossy())),
    )?;
    let left = scratch_dirs_in(&tmp);
    check(&format!("nothing left behind: {left:?}"), left.is_empty())
}

fn agent_role(dir: &Path) -> Result<(), String> {
    let mut made = String::new();
    for json in [
        format!(r#"{{"fs": {{"read": ["{}/**"]}}}}"#, dir.display()),
        r#"{"net": "deny"}"#.to_string(),
    ] {
        let p = policy(&json);
        let out = sh(&p, "echo x > $TMPDIR/left; mkdir $TMPDIR/d; echo $TMPDIR")?;
        check(&format!("run: {}", show(&out)), out.success())?;
        made.push_str(&stdout(&out));
        made.push('\n');
    }
    std::fs::write(dir.join("made"), made).map_err(|e| e.to_string())
}

/// Starts the test binary as an agent in `role`, with `tmp` as its temporary directory.
fn agent(dir: &Path, tmp: &Path, role: &str) -> Result<std::process::Child, String> {
    cases::process_of(CASE_VAR, DIR_VAR, role, dir)
        .env("TMPDIR", tmp)
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())
}

/// Waits until the holding agent `pid` made its scratch directory and reported it.
fn held_dir(dir: &Path, pid: u32) -> Result<String, String> {
    let file = dir.join(format!("held-{pid}"));
    for _ in 0..600 {
        if let Ok(made) = std::fs::read_to_string(&file) {
            if made.ends_with('\n') {
                return Ok(made.trim().to_string());
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Err(format!("agent {pid} never reported its scratch directory"))
}

/// An agent killed after a run cannot remove its scratch directory. The next agent's first
/// run in that temporary directory removes it, and nothing else: not a living agent's (found
/// by its lock, not its pid), not what a link of the same name points to, not another user's.
fn killed_agents_litter(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let dir = canonical(dir);
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).map_err(|e| e.to_string())?;
    let mut killed = agent(&dir, &tmp, HOLD_ROLE)?;
    let mut alive = agent(&dir, &tmp, HOLD_ROLE)?;
    let killed_dir = held_dir(&dir, killed.id())?;
    let alive_dir = held_dir(&dir, alive.id())?;
    let _ = killed.kill();
    let _ = killed.wait();
    // What the killed agent's last run left, unreadable to make emptying work for it.
    let left = Path::new(&killed_dir).join("d");
    std::fs::create_dir_all(left.join("e")).map_err(|e| e.to_string())?;
    std::fs::set_permissions(&left, std::fs::Permissions::from_mode(0o000))
        .map_err(|e| e.to_string())?;
    // A link named like a scratch directory, to a victim.
    let victim = dir.join("victim");
    std::fs::create_dir(&victim).map_err(|e| e.to_string())?;
    std::fs::write(victim.join("keep"), "x").map_err(|e| e.to_string())?;
    let link = tmp.join("toolpolicy-scratch-999999999-0");
    std::os::unix::fs::symlink(&victim, &link).map_err(|e| e.to_string())?;
    // Another user's (only root can make one).
    let foreign = tmp.join("toolpolicy-scratch-999999998-0");
    // SAFETY: geteuid has no arguments.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        std::fs::create_dir(&foreign).map_err(|e| e.to_string())?;
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).map_err(|e| e.to_string())?;
    }
    check(
        &format!("the killed agent's directory {killed_dir} is there before the next agent"),
        Path::new(&killed_dir).is_dir(),
    )?;

    let out = agent(&dir, &tmp, AGENT_ROLE)?
        .wait()
        .map_err(|e| e.to_string())?;
    let _ = alive.kill();
    let _ = alive.wait();
    check(&format!("the next agent ran: {out}"), out.success())?;
    check(
        &format!("the killed agent's directory {killed_dir} is gone"),
        !Path::new(&killed_dir).exists(),
    )?;
    check(
        &format!("the living agent's directory {alive_dir} is kept"),
        Path::new(&alive_dir).is_dir(),
    )?;
    check(
        "the link and its victim are untouched",
        std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink())
            && victim.join("keep").exists(),
    )?;
    check(
        "another user's directory of that name is kept",
        !root || foreign.is_dir(),
    )
}

fn hold_role(dir: &Path) -> Result<(), String> {
    let p = policy(r#"{"net": "deny"}"#);
    let out = sh(&p, "echo $TMPDIR")?;
    check(&format!("run: {}", show(&out)), out.success())?;
    let held = dir.join(format!("held-{}", std::process::id()));
    std::fs::write(held, format!("{}\n", stdout(&out))).map_err(|e| e.to_string())?;
    std::thread::sleep(std::time::Duration::from_secs(60));
    Ok(())
}
