//! The strict view's template (`sandbox/src/mounts/template.rs`): built once per prepared
//! policy and copied per run. Every case runs one prepared policy several times through the
//! public runner, in a process of its own that has a private mount namespace (so that the host
//! mounts a case makes between runs stay its own): a run must see exactly what a fresh build
//! would after the roots changed on disk, and no run can change the template that later runs
//! copy.
//!
//! Root only: most cases build a root runner's template, which needs `CAP_SYS_ADMIN` over the
//! caller's mount namespace; the cases of runners without it (a template held in a user
//! namespace of the runner's, `sandbox/src/mounts/held.rs`) get there from root, by entering a
//! user namespace without a mount namespace, or by changing the effective uid.

#[path = "support/cases.rs"]
mod cases;
#[path = "support/kernel.rs"]
mod kernel;
#[path = "support/mounts.rs"]
mod mounts;
#[path = "support/namespaces.rs"]
mod namespaces;
// The runner's own descriptor passing, which `escape-probe pty-pass` sends with.
#[path = "../src/fdpass.rs"]
#[allow(dead_code, unused_imports)]
mod fdpass;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cases::{check, Case};
use policy_runtime::ToolPolicy;
use sandbox::mounts::template::{ViewBuild, ViewLease, ViewSource};
use sandbox::netns::{NetnsPerRunWhy, NetnsSource};
use sandbox::runner::{prepare, prepared_for, run, Prepared, RunOptions, RunOutput};
use sandbox::Profile;

const CASE_VAR: &str = "VIEW_TEMPLATE_CASE";
const DIR_VAR: &str = "VIEW_TEMPLATE_DIR";

const CASES: &[(&str, Case)] = &[
    (
        "a_root_renamed_away_and_recreated_is_the_new_one_in_the_next_run",
        root_renamed_and_recreated,
    ),
    (
        "a_root_replaced_by_a_symlink_to_a_secret_never_shows_the_secret",
        root_replaced_by_a_symlink,
    ),
    (
        "a_directory_mounted_over_a_root_is_what_the_next_run_sees",
        mounted_over_a_root,
    ),
    (
        "a_host_mount_made_under_a_root_is_seen_by_the_next_run",
        mounted_under_a_root,
    ),
    ("a_root_removed_is_gone_in_the_next_run", root_removed),
    (
        "no_run_can_change_the_template_and_scratch_is_private_to_each_run",
        never_writable,
    ),
    (
        "two_concurrent_runs_of_one_policy_have_their_own_scratch",
        concurrent_runs,
    ),
    (
        "runs_lease_a_mount_namespace_of_the_runner_one_at_a_time",
        leased_namespaces,
    ),
    (
        "copied_views_give_each_run_a_namespace_of_its_own",
        copied_views,
    ),
    (
        "a_one_shot_run_builds_its_own_namespaces_and_keeps_nothing",
        one_shot_keeps_nothing,
    ),
    (
        "a_runner_in_a_user_namespace_of_its_own_copies_the_view_when_it_may_not_lease_one",
        runner_in_a_user_namespace,
    ),
    (
        "a_runner_in_a_user_namespace_that_does_not_own_its_mounts_holds_its_template_in_one_it_makes",
        runner_in_a_user_namespace_without_mounts,
    ),
    (
        "a_runner_whose_uid_changed_holds_its_template_again_for_the_new_uid",
        runner_that_changed_its_uid,
    ),
    (
        "a_mount_made_in_a_mount_namespace_the_runner_entered_since_is_in_the_next_run",
        runner_entered_another_mount_namespace,
    ),
    (
        "a_mount_made_by_a_thread_with_a_mount_namespace_of_its_own_is_in_its_next_run",
        thread_with_its_own_mount_namespace,
    ),
];

fn main() -> ExitCode {
    if let Some(code) = cases::in_case_process(CASE_VAR, DIR_VAR, CASES, &[]) {
        return code;
    }
    let ready = || {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            kernel::missing(
                "a view template needs CAP_SYS_ADMIN over the mount namespace: root only",
            );
            return false;
        }
        kernel::supports(Profile::Strict)
    };
    cases::run_suite(CASES, ready, |name| {
        vec![(
            name.to_string(),
            cases::in_new_process(CASE_VAR, DIR_VAR, name),
        )]
    })
}

// ---- helpers of the case processes ----

/// Moves the calling thread into a mount namespace of its own (its host mounts stay here). In
/// a process of one thread (no libtest harness) that is the whole process; a thread of
/// several gets a namespace (and, with it, a root and working directory) of its own.
fn private_mounts() -> Result<(), String> {
    let null = std::ptr::null::<libc::c_char>();
    // SAFETY: unshare and mount with valid C strings affect only the calling thread's view.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(format!("unshare: {}", std::io::Error::last_os_error()));
        }
        if libc::mount(
            null,
            c"/".as_ptr(),
            null,
            libc::MS_REC | libc::MS_PRIVATE,
            null.cast(),
        ) != 0
        {
            return Err(format!("private /: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Mounts a fresh tmpfs at `target` (in the case's own mount namespace).
fn tmpfs(target: &Path) -> Result<(), String> {
    mounts::mount("tmpfs", target, "tmpfs", 0)
}

/// The case's setup: a private mount namespace, and an empty `root` directory in the case's
/// (canonical) directory. Returns both.
fn case_root(dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    private_mounts()?;
    let dir = canonical(dir);
    let root = dir.join("root");
    std::fs::create_dir(&root).map_err(|e| e.to_string())?;
    Ok((dir, root))
}

/// Writes `text` to `root/marker`.
fn marker(root: &Path, text: &str) -> Result<(), String> {
    std::fs::write(root.join("marker"), text).map_err(|e| e.to_string())
}

fn canonical(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).expect("canonical case directory")
}

fn policy(json: &str) -> ToolPolicy {
    ToolPolicy::from_json_str("case", json).expect("valid policy")
}

/// The policy granting `access` ("read" or "write") to `root/**`, checked to use a template.
fn root_policy(access: &str, root: &Path) -> Result<ToolPolicy, String> {
    root_policy_with(access, root, "")
}

/// [`root_policy`] with more top-level fields (`extra`: `, "key": value...`).
fn root_policy_with(access: &str, root: &Path, extra: &str) -> Result<ToolPolicy, String> {
    let p = policy(&format!(
        r#"{{"fs": {{"{access}": ["{}/**"]}}{extra}}}"#,
        root.display()
    ));
    let prepared = prepare(&p, Profile::Strict, Path::new("/bin/sh")).map_err(|e| e.to_string())?;
    check(
        &format!(
            "the policy's view is copied from a template: {:?}",
            prepared.view_build()
        ),
        matches!(
            prepared.view_build(),
            Some(ViewBuild::Template | ViewBuild::HeldTemplate)
        ),
    )?;
    Ok(p)
}

/// The prepared policy that the runs of `sh` use.
fn prepared_as_run(policy: &ToolPolicy) -> Result<std::sync::Arc<Prepared>, String> {
    let argv: Vec<OsString> = vec!["/bin/sh".into()];
    prepared_for(
        policy,
        &argv,
        &RunOptions::default().profile(Profile::Strict),
    )
    .map_err(|e| e.to_string())
}

fn sh(policy: &ToolPolicy, script: &str) -> Result<RunOutput, String> {
    sh_from(policy, script, ViewSource::Leased)
}

fn sh_from(policy: &ToolPolicy, script: &str, source: ViewSource) -> Result<RunOutput, String> {
    let argv: Vec<OsString> = vec!["/bin/sh".into(), "-c".into(), script.into()];
    let opts = RunOptions::default()
        .profile(Profile::Strict)
        .view_source(source);
    run(policy, &argv, &opts).map_err(|e| e.to_string())
}

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

/// Runs `cat root/marker` and checks it printed `want`.
fn reads(p: &ToolPolicy, root: &Path, want: &str, what: &str) -> Result<(), String> {
    let out = sh(p, &format!("cat {}/marker", root.display()))?;
    check(
        &format!("{what}: {}", show(&out)),
        out.success() && stdout(&out) == want,
    )
}

// ---- cases ----

/// The template holds the root's old inode; after the rename a fresh build binds the new
/// directory, and so must the next run; the old one, outside every root, is not in the view.
fn root_renamed_and_recreated(dir: &Path) -> Result<(), String> {
    let (dir, root) = case_root(dir)?;
    marker(&root, "old")?;
    let p = root_policy("read", &root)?;
    reads(&p, &root, "old", "run 1 reads its root")?;
    reads(&p, &root, "old", "run 2 reads its root")?;
    let old = dir.join("old");
    std::fs::rename(&root, &old).map_err(|e| e.to_string())?;
    std::fs::create_dir(&root).map_err(|e| e.to_string())?;
    marker(&root, "new")?;
    reads(&p, &root, "new", "run 3 reads the new root")?;
    let out = sh(&p, &format!("cat {}/marker", old.display()))?;
    check(
        &format!("run 3 cannot read the old root: {}", show(&out)),
        !out.success() && !stdout(&out).contains("old"),
    )
}

/// The root is moved away, a secret written into it, and a symlink to it left at the root's
/// path: a fresh build refuses (a bind source holds a symlink), and so must the next run; it
/// never shows the secret.
fn root_replaced_by_a_symlink(dir: &Path) -> Result<(), String> {
    let (dir, root) = case_root(dir)?;
    marker(&root, "public")?;
    let p = root_policy("read", &root)?;
    reads(&p, &root, "public", "run 1 reads its root")?;
    let moved = dir.join("moved");
    std::fs::rename(&root, &moved).map_err(|e| e.to_string())?;
    std::fs::write(moved.join("marker"), "secret").map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(&moved, &root).map_err(|e| e.to_string())?;
    let argv: Vec<OsString> = vec![
        "/bin/sh".into(),
        "-c".into(),
        format!(
            "cat {0}/marker; cat {1}/marker",
            root.display(),
            moved.display()
        )
        .into(),
    ];
    match run(&p, &argv, &RunOptions::default().profile(Profile::Strict)) {
        Err(e) => check(
            &format!("refused for the symlink: {e}"),
            e.to_string().contains("symlink"),
        ),
        Ok(out) => check(
            &format!("run 2 never shows the secret: {}", show(&out)),
            !stdout(&out).contains("secret"),
        ),
    }
}

/// A tmpfs mounted over the root on the host: a fresh build binds what is mounted there.
fn mounted_over_a_root(dir: &Path) -> Result<(), String> {
    let (_, root) = case_root(dir)?;
    marker(&root, "under")?;
    let p = root_policy("read", &root)?;
    reads(&p, &root, "under", "run 1 reads its root")?;
    tmpfs(&root)?;
    marker(&root, "over")?;
    reads(
        &p,
        &root,
        "over",
        "run 2 reads what is mounted over the root",
    )
}

/// A tmpfs mounted on a directory inside the root on the host: the template's recursive clone
/// of the root lacks it, a fresh build has it.
fn mounted_under_a_root(dir: &Path) -> Result<(), String> {
    private_mounts()?;
    let (sub, p) = root_with_sub(dir)?;
    reads(&p, &sub, "under", "run 1 reads its root")?;
    mounted_then_read(&p, &sub, "run 2 reads the mount made under the root")
}

/// A root removed: a fresh build skips it (roots are optional), so the next run does not see
/// the directory the template still holds.
fn root_removed(dir: &Path) -> Result<(), String> {
    let (_, root) = case_root(dir)?;
    marker(&root, "here")?;
    let p = root_policy("read", &root)?;
    reads(&p, &root, "here", "run 1 reads its root")?;
    std::fs::remove_file(root.join("marker")).map_err(|e| e.to_string())?;
    std::fs::remove_dir(&root).map_err(|e| e.to_string())?;
    let out = sh(
        &p,
        &format!("[ -e {} ] && echo present || echo gone", root.display()),
    )?;
    check(
        &format!("run 2 does not see the removed root: {}", show(&out)),
        stdout(&out) == "gone",
    )
}

/// Every change a run tries in the view's own directories fails (the template's superblocks
/// are shared by every copy), and a later run sees nothing of them nor of the first run's
/// private `/tmp` and `/dev/shm`.
fn never_writable(dir: &Path) -> Result<(), String> {
    let (dir, root) = case_root(dir)?;
    let p = root_policy("write", &root)?;
    let parent = dir.display();
    let attempts = [
        "touch /new".to_string(),
        "mkdir /newdir".to_string(),
        "chmod 700 /".to_string(),
        "touch /dev/new".to_string(),
        "rm -f /dev/fd".to_string(),
        "chmod 700 /dev".to_string(),
        "rmdir /proc".to_string(),
        format!("touch {parent}/new"),
        format!("chmod 700 {parent}"),
        "ln -s /etc /usr-link".to_string(),
    ];
    for attempt in &attempts {
        let out = sh(&p, attempt)?;
        check(
            &format!("`{attempt}` fails in the view: {}", show(&out)),
            !out.success(),
        )?;
    }
    let first = sh(
        &p,
        "echo one > /tmp/left && echo one > /dev/shm/left && cat /tmp/left /dev/shm/left",
    )?;
    check(
        &format!("run 1 writes its /tmp and /dev/shm: {}", show(&first)),
        first.success() && stdout(&first) == "one\none",
    )?;
    let later = sh(
        &p,
        &format!("ls -a / /dev /tmp /dev/shm {parent}; stat -c '%a' / /dev {parent}"),
    )?;
    let seen = stdout(&later);
    check(
        &format!("a later run sees nothing of them: {}", show(&later)),
        later.success()
            && !seen.contains("new")
            && !seen.contains("left")
            && !seen.contains("usr-link")
            && !seen.lines().any(|l| l == "700"),
    )
}

/// Two runs of one policy at once, each writing its own name into `/tmp` and `/dev/shm`:
/// each reads back only its own.
fn concurrent_runs(dir: &Path) -> Result<(), String> {
    let (_, root) = case_root(dir)?;
    let p = root_policy("read", &root)?;
    let script = |me: &str| {
        format!(
            "echo {me} > /tmp/who && echo {me} > /dev/shm/who && sleep 0.3 && cat /tmp/who /dev/shm/who"
        )
    };
    let outs: Vec<Result<RunOutput, String>> = std::thread::scope(|s| {
        let a = s.spawn(|| sh(&p, &script("a")));
        let b = s.spawn(|| sh(&p, &script("b")));
        vec![a.join().expect("run a"), b.join().expect("run b")]
    });
    for (out, me) in outs.into_iter().zip(["a", "b"]) {
        let out = out?;
        check(
            &format!("run {me} sees only its own scratch: {}", show(&out)),
            out.success() && stdout(&out) == format!("{me}\n{me}"),
        )?;
    }
    Ok(())
}

/// A run's namespaces, held open from the test process while the run was running, so that
/// their identities stay comparable: the kernel reuses a freed namespace's inode number for the
/// next one it makes, so numbers read after one of them ended prove nothing.
struct Seen {
    out: RunOutput,
    /// The run's mount, user, network and IPC namespaces, and the user namespaces that own
    /// its mount, network and IPC namespaces.
    mnt: std::fs::File,
    user: std::fs::File,
    net: std::fs::File,
    ipc: std::fs::File,
    owner: u64,
    net_owner: u64,
    ipc_owner: u64,
}

impl Seen {
    fn mnt(&self) -> u64 {
        ino(&self.mnt)
    }
    fn user(&self) -> u64 {
        ino(&self.user)
    }
    fn net(&self) -> u64 {
        ino(&self.net)
    }
    fn ipc(&self) -> u64 {
        ino(&self.ipc)
    }
    /// The parent of the run's user namespace.
    fn parent(&self) -> u64 {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.user);
        namespaces::parent_of(Path::new(&format!("/proc/self/fd/{fd}")))
    }
    /// How many mounts the run's view held (the script's first line, from `MOUNTS`).
    fn mounts(&self) -> String {
        stdout(&self.out)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    }
}

/// What `/tmp` and `/dev/shm` hold in the mount namespace of `seen`'s run, while it waits in
/// the pool: `ls -a` of both, run by a process of the test that joined it.
fn idle_listing(seen: &Seen) -> Result<String, String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let ns = seen.mnt.as_raw_fd();
    let mut ls = std::process::Command::new("/bin/ls");
    ls.args(["-a", "/tmp", "/dev/shm"]);
    // SAFETY: setns in the forked child, which has one thread, before it executes ls.
    unsafe {
        ls.pre_exec(move || {
            if libc::setns(ns, libc::CLONE_NEWNS) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = ls
        .output()
        .map_err(|e| format!("ls in the idle namespace: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ino(f: &std::fs::File) -> u64 {
    use std::os::unix::fs::MetadataExt;
    f.metadata().expect("fstat a namespace").ino()
}

/// Counts the mounts of the run's view.
const MOUNTS: &str = "wc -l < /proc/self/mountinfo";

/// Runs `script` then `sleep marker` (a duration no other process on the machine is likely to
/// sleep for, which names the run's process) and holds the run's namespaces while it sleeps.
fn seen(
    policy: &ToolPolicy,
    script: &str,
    marker: &str,
    source: ViewSource,
) -> Result<Seen, String> {
    let opts = RunOptions::default()
        .profile(Profile::Strict)
        .view_source(source);
    seen_with(policy, script, marker, &opts)
}

/// [`seen`] of a run with `opts`.
fn seen_with(
    policy: &ToolPolicy,
    script: &str,
    marker: &str,
    opts: &RunOptions,
) -> Result<Seen, String> {
    use namespaces::{owner_of, pid_running};
    let (out, held) = std::thread::scope(|s| {
        let run = s.spawn(|| {
            let argv: Vec<OsString> = vec![
                "/bin/sh".into(),
                "-c".into(),
                format!("{script}; exec sleep {marker}").into(),
            ];
            run(policy, &argv, opts).map_err(|e| e.to_string())
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut held = None;
        while held.is_none() && std::time::Instant::now() < deadline && !run.is_finished() {
            if let Some(pid) = pid_running(marker) {
                let ns = |kind: &str| PathBuf::from(format!("/proc/{pid}/ns/{kind}"));
                let open = |kind: &str| std::fs::File::open(ns(kind)).ok();
                if let (Some(mnt), Some(user), Some(net), Some(ipc)) =
                    (open("mnt"), open("user"), open("net"), open("ipc"))
                {
                    let owners = ["mnt", "net", "ipc"].map(|kind| owner_of(&ns(kind)));
                    held = Some((mnt, user, net, ipc, owners));
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        (run.join().expect("the run's thread"), held)
    });
    let out = out?;
    let (mnt, user, net, ipc, [owner, net_owner, ipc_owner]) =
        held.ok_or_else(|| format!("the run's process was not found: {}", show(&out)))?;
    Ok(Seen {
        out,
        mnt,
        user,
        net,
        ipc,
        owner,
        net_owner,
        ipc_owner,
    })
}

/// The view's mount namespace is the runner's, lent to one run at a time: runs one after the
/// other get the same one (and each a user namespace of its own), holding the same mounts; the
/// files a run leaves in its scratch (here one killed by its timeout) are removed by the runner
/// before the namespace is lent again, and a run that leaves more than it removes has its
/// namespace closed, so nothing it wrote outlives it; two runs at once get two; while a run is
/// running, the kernel names the runner's user namespace as its mount namespace's owner, so the
/// command holds no capability over any mount of its view.
fn leased_namespaces(dir: &Path) -> Result<(), String> {
    use namespaces::inode_of;
    let (_, root) = case_root(dir)?;
    // Every run of the case under one policy (one template, one pool), with a timeout.
    let p = root_policy_with("read", &root, r#", "limits": {"timeout_ms": 2000}"#)?;
    let leased = ViewSource::Leased;
    let first = seen(&p, MOUNTS, "0.3101", leased)?;
    let prepared = prepared_as_run(&p)?;
    check(
        &format!("the runner lends namespaces: {:?}", prepared.view_lease()),
        prepared.view_lease() == Some(ViewLease::Lending),
    )?;
    let runner = inode_of(Path::new("/proc/self/ns/user"));
    let host = inode_of(Path::new("/proc/self/ns/mnt"));
    let host_ipc = inode_of(Path::new("/proc/self/ns/ipc"));
    check(
        &format!(
            "the run's mount namespace is not the runner's ({} vs {host}) and belongs to the \
             runner's user namespace {runner}, not to the command's {}: {}; so does its IPC \
             namespace ({} vs {host_ipc}): {}",
            first.mnt(),
            first.user(),
            first.owner,
            first.ipc(),
            first.ipc_owner
        ),
        first.mnt() != host
            && first.owner == runner
            && first.user() != runner
            && first.ipc() != host_ipc
            && first.ipc_owner == runner,
    )?;
    // A run that removes what it wrote leaves its scratch as it was made: the namespace is lent
    // again, with the same mounts.
    let tidy = seen(
        &p,
        &format!("echo x > /tmp/x && rm /tmp/x && {MOUNTS}"),
        "0.3102",
        leased,
    )?;
    check(
        &format!(
            "a later run reuses the namespace ({} then {}), with its user namespace ({} then \
             {}) and the same mounts ({} then {})",
            first.mnt(),
            tidy.mnt(),
            first.user(),
            tidy.user(),
            first.mounts(),
            tidy.mounts()
        ),
        tidy.mnt() == first.mnt() && tidy.user() == first.user() && tidy.mounts() == first.mounts(),
    )?;
    // A run killed by its timeout with files left in its scratch: the runner removes them
    // (a directory of mode 000, a second name of a file, a FIFO, links to a host directory and
    // to `/`, which are removed, not followed), and the namespace is lent again with nothing of
    // the run.
    let sentinel = dir.join("sentinel");
    std::fs::create_dir_all(&sentinel).map_err(|e| e.to_string())?;
    std::fs::write(sentinel.join("kept"), "kept").map_err(|e| e.to_string())?;
    let killed = seen(
        &p,
        &format!(
            "echo left > /tmp/left; echo left > /dev/shm/left; mkdir -p /tmp/d/e; \
             echo left > /tmp/d/e/f; ln -s {} /tmp/d/link; ln -s / /dev/shm/root; \
             ln /tmp/left /tmp/d/e/hardlink; mkfifo /dev/shm/leftfifo; \
             chmod 000 /tmp/d/e /tmp/d",
            sentinel.display()
        ),
        "30.3103",
        leased,
    )?;
    check(
        &format!(
            "the run in the same namespace ({}) ends by its timeout: {}",
            killed.mnt(),
            show(&killed.out)
        ),
        killed.out.timed_out && killed.mnt() == first.mnt(),
    )?;
    let at_rest = idle_listing(&killed)?;
    check(
        &format!("the killed run's namespace holds nothing of it while idle: {at_rest:?}"),
        at_rest.contains("/dev/shm:")
            && !at_rest.contains("left")
            && !at_rest.contains("root")
            && !at_rest.lines().any(|l| l == "d"),
    )?;
    let emptied = seen(
        &p,
        &format!("{MOUNTS}; ls -a /tmp /dev/shm"),
        "0.3104",
        leased,
    )?;
    check(
        &format!(
            "after a run that left files, the next run has the same namespace ({} then {}) \
             and user namespace ({} then {}), with the same mounts, nothing of the killed run, \
             and the host directory its link named intact: {}",
            killed.mnt(),
            emptied.mnt(),
            killed.user(),
            emptied.user(),
            show(&emptied.out)
        ),
        emptied.mnt() == killed.mnt()
            && emptied.mounts() == first.mounts()
            && !stdout(&emptied.out).contains("left")
            && !stdout(&emptied.out).contains("root")
            && !stdout(&emptied.out).lines().any(|l| l == "d")
            && emptied.user() == killed.user()
            && sentinel.join("kept").exists(),
    )?;
    // More files than the runner removes (64): that namespace is closed, and what the run
    // wrote goes with it.
    let deep = seen(
        &p,
        "i=0; while [ $i -lt 70 ]; do mkdir /tmp/d$i || exit 1; i=$((i+1)); done",
        "0.3108",
        leased,
    )?;
    let after = seen(
        &p,
        &format!("{MOUNTS}; ls -a /tmp /dev/shm"),
        "0.3109",
        leased,
    )?;
    check(
        &format!(
            "after a run that left more files than the runner removes ({}), the next run has \
             another namespace ({} then {}) with the same mounts and nothing of it, and the closed \
             namespace's user namespace, which holds nothing of a run ({} then {}): {}",
            show(&deep.out),
            deep.mnt(),
            after.mnt(),
            deep.user(),
            after.user(),
            show(&after.out)
        ),
        deep.mnt() == first.mnt()
            && after.mnt() != deep.mnt()
            && after.mounts() == first.mounts()
            && !stdout(&after.out).lines().any(|l| l.starts_with("d"))
            && after.user() == deep.user(),
    )?;
    let next = seen(&p, MOUNTS, "0.3105", leased)?;
    check(
        &format!(
            "that namespace is lent again ({} then {}) with the same mounts",
            after.mnt(),
            next.mnt()
        ),
        next.mnt() == after.mnt() && next.mounts() == first.mounts(),
    )?;
    let (a, b) = two_at_once(&p, ["0.8106", "0.3107"])?;
    check(
        &format!(
            "two runs at once have two mount namespaces ({} and {}), two IPC namespaces ({} \
             and {}) and two user namespaces ({} and {})",
            a.mnt(),
            b.mnt(),
            a.ipc(),
            b.ipc(),
            a.user(),
            b.user()
        ),
        a.mnt() != b.mnt() && a.ipc() != b.ipc() && a.user() != b.user(),
    )?;
    user_maps_never_change(&p, runner)?;
    ipc_objects_never_reach_the_next_run(&p)?;
    ptys_never_reach_the_next_run(&p, &root)?;
    scratch_is_kept_only_while_untouched(&p, &root)
}

/// The user namespace is lent with the view namespace ([`sandbox`]'s `mounts::lent_user`): runs
/// one after the other join the same one, which is not `runner` (the user namespace the view's
/// namespaces belong to) and maps the runner's ids to 1000, as a run's own did. No run can write
/// any of its maps (the run's `/proc` is read-only, and each map takes one write), so the next
/// run sees them as they were; nor can it change its limits, leave a key in its keyring for the
/// next run, or hold a capability (joining a user namespace grants all of them, until the
/// child empties its sets).
fn user_maps_never_change(p: &ToolPolicy, runner: u64) -> Result<(), String> {
    const MAPS: &str = "id -u; id -g; cd /proc/self && cat uid_map gid_map setgroups projid_map";
    let first = seen(p, MAPS, "0.3108", ViewSource::Leased)?;
    let maps = stdout(&first.out);
    // SAFETY: geteuid and getegid cannot fail.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let want = format!("1000 1000 1000 {euid} 1 1000 {egid} 1 deny");
    check(
        &format!("the run is uid and gid 1000, mapped to the runner's, `setgroups` denied: {maps}"),
        maps.split_whitespace()
            .take(9)
            .collect::<Vec<_>>()
            .join(" ")
            == want
            && first.user() != runner,
    )?;
    each_blocked(
        p,
        &[
            &["write-text", "/proc/self/uid_map", "0 0 1"],
            &["write-text", "/proc/self/gid_map", "0 0 1"],
            &["write-text", "/proc/self/setgroups", "allow"],
            &["write-text", "/proc/self/projid_map", "0 0 1"],
            // Its limits, which take CAP_SYS_RESOURCE there.
            &["write-text", "/proc/sys/user/max_user_namespaces", "0"],
            &["write-text", "/proc/sys/user/max_inotify_instances", "1"],
            // A user namespace's keyrings outlive its runs: the strict program refuses them.
            &["add-key", "toolpolicy-left"],
            &["find-key", "toolpolicy-left"],
            &["request-key", "toolpolicy-left"],
        ],
    )?;
    // Joining a user namespace gives every capability in it, as making one does: the child
    // empties its sets before the command starts.
    let (_, status) = probe_line(p, &["status"])?;
    check(
        &format!("a run in the lent user namespace holds no capability: {status}"),
        field(&status, "CapEff=") == "0000000000000000"
            && field(&status, "CapPrm=") == "0000000000000000"
            && field(&status, "NoNewPrivs=") == "1"
            && field(&status, "Uid=") == "1000",
    )?;
    let next = seen(p, MAPS, "0.3109", ViewSource::Leased)?;
    check(
        &format!(
            "the next run joins the same user namespace ({} then {}) with the same maps: {}",
            first.user(),
            next.user(),
            show(&next.out)
        ),
        next.user() == first.user() && stdout(&next.out) == maps,
    )
}

/// A run of `escape-probe ACTION...`: the IPC namespace its `ipc-status` names (empty for other
/// actions), and its result line.
fn probe_line(p: &ToolPolicy, action: &[&str]) -> Result<(String, String), String> {
    let probe = env!("CARGO_BIN_EXE_escape-probe");
    let argv: Vec<OsString> = std::iter::once(probe)
        .chain(action.iter().copied())
        .map(OsString::from)
        .collect();
    let out = run(p, &argv, &RunOptions::default().profile(Profile::Strict))
        .map_err(|e| e.to_string())?;
    let line = stdout(&out);
    Ok((
        line.split_whitespace()
            .find_map(|f| f.strip_prefix("IpcNs="))
            .unwrap_or_default()
            .to_string(),
        line,
    ))
}

/// The IPC namespace is lent with the view namespace: a tidy run's is lent again, and after a
/// run that left a System V shared memory segment, semaphore set or message queue, or a POSIX
/// message queue, the next run sees none of it (its view namespace, and the IPC namespace with
/// it, was closed).
fn ipc_objects_never_reach_the_next_run(p: &ToolPolicy) -> Result<(), String> {
    const NAME: &str = "toolpolicy-left";
    let status = ["ipc-status", NAME];
    let (first, _) = probe_line(p, &status)?;
    let (again, _) = probe_line(p, &status)?;
    check(
        &format!("a tidy run's IPC namespace is lent again: {first} then {again}"),
        !first.is_empty() && again == first,
    )?;
    // Nor can a run change the IPC namespace's limits for the next: its `/proc` is read-only.
    each_blocked(
        p,
        &[
            &["write", "/proc/sys/kernel/shmmni"],
            &["write", "/proc/sys/fs/mqueue/queues_max"],
        ],
    )?;
    for kind in ["shm", "sem", "msg", "mq"] {
        // Landlock answers a strict run's `mq_open` with `EACCES`, but only once the queue
        // is made: the probe says whether it was.
        let (_, left) = probe_line(p, &["ipc-leave", kind, NAME])?;
        check(
            &format!("a run leaves a {kind} object: {left}"),
            left.starts_with("SUCCEEDED"),
        )?;
        let (_, next) = probe_line(p, &status)?;
        check(
            &format!("the next run sees nothing of the {kind} object: {next}"),
            next.contains("SysvObjects=0 ") && next.ends_with("Mq=absent"),
        )?;
    }
    Ok(())
}

/// Checks that each of `actions`, a run of `escape-probe ACTION...` under `p`, is blocked.
fn each_blocked(p: &ToolPolicy, actions: &[&[&str]]) -> Result<(), String> {
    for action in actions {
        let (_, line) = probe_line(p, action)?;
        check(
            &format!("a run cannot `{}`: {line}", action.join(" ")),
            line.starts_with("BLOCKED"),
        )?;
    }
    Ok(())
}

/// The value of `key` (`Name=`) in a probe's status line (empty when missing).
fn field(line: &str, key: &str) -> String {
    line.split_whitespace()
        .find_map(|f| f.strip_prefix(key))
        .unwrap_or_default()
        .to_string()
}

/// The devpts instance is lent with the view namespace: a tidy run's is lent again, also after
/// a run that opened and closed a pty (the next run's pty is `/dev/pts/0` again), and no run
/// can mount over it; after a run that changed the mode of `ptmx` or of `/dev/pts` or the time
/// of `ptmx`, or passed a pty's master out of the run (here to this process, over a unix socket
/// in a write root beside `root`), the next run has another instance, as mounted, listing
/// `ptmx` alone.
fn ptys_never_reach_the_next_run(p: &ToolPolicy, root: &Path) -> Result<(), String> {
    let status = |p: &ToolPolicy| probe_line(p, &["pts-status"]).map(|(_, line)| line);
    let as_mounted = |line: &str, first: &str| {
        field(line, "Entries=") == "ptmx"
            && field(line, "Root=") == field(first, "Root=")
            && field(line, "Ptmx=") == field(first, "Ptmx=")
    };
    let first = status(p)?;
    let again = status(p)?;
    let mount = field(&first, "PtsMount=");
    check(
        &format!(
            "a tidy run's devpts instance is lent again, listing ptmx alone: {first} then {again}"
        ),
        !mount.is_empty()
            && mount != "unknown"
            && again == first
            && field(&first, "Entries=") == "ptmx"
            && field(&first, "Ptmx=") == "666",
    )?;
    for _ in 0..2 {
        let (_, pty) = probe_line(p, &["pty"])?;
        let after = status(p)?;
        check(
            &format!("a run with a pty ({pty}) leaves the instance to the next: {after}"),
            pty.contains("/dev/pts/0") && after == first,
        )?;
    }
    each_blocked(p, &[&["mount-tmpfs", "/dev/pts"], &["mount-tmpfs", "/tmp"]])?;
    let mut last = first.clone();
    let changes: [&[&str]; 3] = [
        &["chmod", "600", "/dev/pts/ptmx"],
        &["chmod", "700", "/dev/pts"],
        &["utimes", "/dev/pts/ptmx", "1000"],
    ];
    for change in changes {
        let path = change.join(" ");
        let (_, changed) = probe_line(p, change)?;
        let next = status(p)?;
        check(
            &format!(
                "after a run that did `{path}` ({changed}), the next run has another \
                 instance, as mounted: {last} then {next}"
            ),
            changed.starts_with("SUCCEEDED")
                && field(&next, "PtsMount=") != field(&last, "PtsMount=")
                && as_mounted(&next, &first),
        )?;
        last = next;
    }
    // A pty whose master outlives the run, held by this process.
    let pass_dir = root.with_file_name("pass");
    std::fs::create_dir(&pass_dir).map_err(|e| e.to_string())?;
    let socket = pass_dir.join("s");
    let listener =
        std::os::unix::net::UnixListener::bind(&socket).map_err(|e| format!("bind: {e}"))?;
    let pass = root_policy_with("write", &pass_dir, r#", "net": "allow""#)?;
    let before = status(&pass)?;
    let (master, sent) = std::thread::scope(|s| {
        let received = s.spawn(|| receive_fd(&listener));
        let sent = probe_line(&pass, &["pty-pass", &socket.display().to_string()]);
        if !sent.as_ref().is_ok_and(|(_, l)| l.starts_with("SUCCEEDED")) {
            // Nothing came: let the receiver's accept return.
            let _ = std::os::unix::net::UnixStream::connect(&socket);
        }
        (received.join().expect("the receiver"), sent)
    });
    let (_, sent) = sent?;
    let master = master?;
    let next = status(&pass)?;
    check(
        &format!(
            "while this process holds the master of a pty a run passed out ({sent}), the next \
             run has another instance, as mounted: {before} then {next}"
        ),
        sent.starts_with("SUCCEEDED")
            && field(&next, "PtsMount=") != field(&before, "PtsMount=")
            && as_mounted(&next, &first),
    )?;
    drop(master);
    Ok(())
}

/// A scratch no run touched is kept with its namespace, its mounts in place: a tidy run's
/// `/tmp` and `/dev/shm` are the next run's. A run that touched it in a way the tool could see
/// (a file made and removed in `/tmp` or `/dev/shm`, a listing, an unnamed file, an extended
/// attribute, a mode, a time) is followed by a run with a new one, which is kept again. Under
/// `net = "allow"` (a policy granting `root`), where the tool could pass a descriptor of its
/// scratch to a host process, no scratch is kept.
fn scratch_is_kept_only_while_untouched(p: &ToolPolicy, root: &Path) -> Result<(), String> {
    let ids_of =
        |p: &ToolPolicy| probe_line(p, &["mount-ids", "/tmp", "/dev/shm"]).map(|(_, line)| line);
    let open = root_policy_with("read", root, r#", "net": "allow""#)?;
    let (one, two) = (ids_of(&open)?, ids_of(&open)?);
    check(
        &format!("under net = allow, each run has a new scratch: {one} then {two}"),
        field(&one, "/tmp=") != field(&two, "/tmp=") && !one.contains("unknown"),
    )?;
    let ids = || ids_of(p);
    let first = ids()?;
    let again = ids()?;
    check(
        &format!("a tidy run's scratch is the next run's: {first} then {again}"),
        again == first && !first.contains("unknown"),
    )?;
    let mut last = again;
    // Runs of one command, so of one template and one pool of namespaces.
    let touches: [&[&str]; 7] = [
        &["make-remove", "/tmp/x"],
        &["make-remove", "/dev/shm/x"],
        &["list-later", "/tmp"],
        &["tmpfile", "/tmp"],
        &["setxattr", "/tmp", "user.left", "78"],
        &["chmod", "1770", "/dev/shm"],
        &["utimes", "/tmp", "1000"],
    ];
    for touch in touches {
        let (_, shown) = probe_line(p, touch)?;
        let (what, done) = (touch.join(" "), shown.starts_with("SUCCEEDED"));
        let next = ids()?;
        let kept = ids()?;
        let id = |line: &str, path: &str| field(line, &format!("{path}="));
        check(
            &format!(
                "after a run that touched the scratch ({what}: {shown}), the next run has a new \
                 one, kept for the run after it: {last}, then {next}, then {kept}"
            ),
            done && id(&next, "/tmp") != id(&last, "/tmp")
                && id(&next, "/dev/shm") != id(&last, "/dev/shm")
                && kept == next,
        )?;
        last = kept;
    }
    Ok(())
}

/// Accepts one connection on `listener` and receives the descriptor it sends (`SCM_RIGHTS`,
/// by the runner's own descriptor passing, which `escape-probe pty-pass` sends with).
fn receive_fd(listener: &std::os::unix::net::UnixListener) -> Result<std::os::fd::OwnedFd, String> {
    use std::os::fd::AsFd;
    let (stream, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
    fdpass::recv_one(stream.as_fd()).map_err(|e| format!("receive a descriptor: {e}"))
}

/// Two leased runs of `MOUNTS` at once, the second started while the first runs: `markers`
/// name them (the first's sleep outlasts the second's).
fn two_at_once(p: &ToolPolicy, markers: [&str; 2]) -> Result<(Seen, Seen), String> {
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| seen(p, MOUNTS, markers[0], ViewSource::Leased));
        let b = s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(300));
            seen(p, MOUNTS, markers[1], ViewSource::Leased)
        });
        (a.join().expect("run a"), b.join().expect("run b"))
    });
    Ok((a?, b?))
}

/// `ViewSource::Copied`, the path a root runner takes when no leased namespace can be made:
/// each run gets a namespace of its own (and its own user namespace owns it), sees its root
/// (inside the private `/tmp`, so through a copy of the template's `/tmp` entry), and nothing of
/// the run before; a leased run of the same policy still works beside it.
fn copied_views(dir: &Path) -> Result<(), String> {
    let (_, root) = case_root(dir)?;
    marker(&root, "here\n")?;
    let p = root_policy("read", &root)?;
    let script = format!("{MOUNTS}; cat {}/marker; ls -a /tmp", root.display());
    let copied = ViewSource::Copied;
    let first = seen(&p, &format!("echo x > /tmp/x; {script}"), "0.3111", copied)?;
    let second = seen(&p, &script, "0.3112", copied)?;
    let leased = seen(&p, &script, "0.3113", ViewSource::Leased)?;
    copied_runs_apart(&first, &second)?;
    check(
        &format!(
            "the copied runs have the same mounts ({} and {}), and a leased run reads the root \
             too: {}",
            first.mounts(),
            second.mounts(),
            show(&leased.out)
        ),
        first.mounts() == second.mounts() && stdout(&leased.out).lines().any(|l| l == "here"),
    )?;
    check(
        &format!(
            "a leased run beside them has another namespace ({}), the runner's",
            leased.mnt()
        ),
        leased.mnt() != first.mnt()
            && leased.mnt() != second.mnt()
            && leased.owner != leased.user(),
    )
}

/// Two runs of a copied view, the first leaving `/tmp/x`: each has a mount namespace of its
/// own, owned by its own user namespace, reads `here` in its root's marker, and the second sees
/// nothing of the first.
fn copied_runs_apart(first: &Seen, second: &Seen) -> Result<(), String> {
    let reads = |s: &Seen| stdout(&s.out).lines().any(|l| l == "here");
    check(
        &format!(
            "copied runs have a namespace each ({} then {}), owned by their own user \
             namespaces, read their root and see nothing of the run before: {} / {}",
            first.mnt(),
            second.mnt(),
            show(&first.out),
            show(&second.out)
        ),
        first.mnt() != second.mnt()
            && first.owner == first.user()
            && second.owner == second.user()
            && reads(first)
            && reads(second)
            && !stdout(&second.out).lines().any(|l| l == "x"),
    )
}

/// `RunOptions::one_shot`, which `policy-sandbox run` sets: a root runner's run builds its view
/// and its network namespace itself, so both belong to the run's own user namespace (a leased
/// one belongs to the runner's), and the process keeps nothing for a later run: after it, the
/// process holds no more descriptors than before (no template's binds, no leased namespace).
/// A leased run of the same policy, after it, keeps both.
fn one_shot_keeps_nothing(dir: &Path) -> Result<(), String> {
    use namespaces::inode_of;
    let (_, root) = case_root(dir)?;
    marker(&root, "here\n")?;
    let p = root_policy("read", &root)?;
    let fds = || std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let before = fds();
    let once = RunOptions::default().profile(Profile::Strict).one_shot();
    let run = seen_with(
        &p,
        &format!("cat {}/marker", root.display()),
        "0.3201",
        &once,
    )?;
    let (user, owner, net_owner) = (run.user(), run.owner, run.net_owner);
    let runner = inode_of(Path::new("/proc/self/ns/user"));
    check(
        &format!("the one-shot run read its root: {}", show(&run.out)),
        run.out.success() && stdout(&run.out).starts_with("here"),
    )?;
    drop(run);
    check(
        &format!(
            "its mount and network namespaces ({owner}, {net_owner}) belong to its own user \
             namespace {user}, not the runner's {runner}"
        ),
        owner == user && net_owner == user && user != runner,
    )?;
    let after = fds();
    check(
        &format!("the process holds {after} descriptors after the run, {before} before"),
        after == before,
    )?;
    let leased = seen(&p, "true", "0.3202", ViewSource::Leased)?;
    let (owner, net_owner) = (leased.owner, leased.net_owner);
    drop(leased);
    check(
        &format!(
            "a leased run's namespaces ({owner}, {net_owner}) belong to the runner's user \
             namespace {runner}, and it keeps descriptors ({} after, {before} before)",
            fds()
        ),
        owner == runner && net_owner == runner && fds() > before,
    )
}

/// Moves this case process into a user namespace of its own, as root there (`0 <uid> 1`), and
/// with `CLONE_NEWNS` among `flags` a mount namespace that namespace owns: a runner in a
/// container.
fn own_user_namespace(flags: libc::c_int) -> Result<(), String> {
    // SAFETY: getters without pointers.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    // SAFETY: this process has one thread (no libtest harness).
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | flags) } != 0 {
        return Err(format!("unshare: {}", std::io::Error::last_os_error()));
    }
    for (file, map) in [
        ("setgroups", "deny".to_string()),
        ("uid_map", format!("0 {uid} 1")),
        ("gid_map", format!("0 {gid} 1")),
    ] {
        std::fs::write(format!("/proc/self/{file}"), map).map_err(|e| format!("{file}: {e}"))?;
    }
    Ok(())
}

/// A runner that is root in a user namespace of its own (a container) holds `CAP_SYS_ADMIN`
/// over its mount namespace, so its policy gets a template; but its pid namespace is the
/// host's, over which it holds nothing, so the kernel lets no view namespace of its own mount
/// a `/proc`. Its runs copy the view instead: each has a namespace of its own, reads its root,
/// and sees nothing of the run before; and the runner says why it lends none.
fn runner_in_a_user_namespace(dir: &Path) -> Result<(), String> {
    own_user_namespace(libc::CLONE_NEWNS)?;
    let (_, root) = case_root(dir)?;
    marker(&root, "here\n")?;
    let p = root_policy("read", &root)?;
    let prepared = prepared_as_run(&p)?;
    check(
        &format!(
            "no run built the template yet, and the network namespace is made per run: {:?}, \
             {:?}",
            prepared.view_lease(),
            prepared.netns_source()
        ),
        prepared.view_lease() == Some(ViewLease::NotBuilt)
            && prepared.netns_source() == Some(&NetnsSource::PerRun(NetnsPerRunWhy::NotOwnHome)),
    )?;
    let script = format!("{MOUNTS}; cat {}/marker; ls -a /tmp", root.display());
    let first = seen(
        &p,
        &format!("echo x > /tmp/x; {script}"),
        "0.3121",
        ViewSource::Leased,
    )?;
    let second = seen(&p, &script, "0.3122", ViewSource::Leased)?;
    copied_runs_apart(&first, &second)?;
    let lease = prepared.view_lease();
    check(
        &format!("the runner says why it lends no view namespace: {lease:?}"),
        matches!(&lease, Some(ViewLease::Refused(why)) if why.contains("procfs")),
    )
}

/// A runner that is root in a user namespace of its own but still in the host's mount
/// namespace holds `CAP_SYS_ADMIN` in its user namespace, not over its mounts, as an unprivileged
/// runner does: its policy's template is held in a user namespace the runner makes for it
/// (`sandbox/src/mounts/held.rs`), said once, when it is prepared. Its runs read their root
/// (inside the private `/tmp`, so through the template's `/tmp` tree), are lent one view
/// namespace one at a time, and the kernel names as that namespace's owner the held user
/// namespace: neither the runner's nor the command's own, but the command's user namespace's
/// parent, so the command holds no capability over any mount of its view. The runner's `/proc`,
/// held beneath each run's own, is not what the run sees there: its pid 1 is its command.
fn runner_in_a_user_namespace_without_mounts(dir: &Path) -> Result<(), String> {
    use namespaces::inode_of;
    own_user_namespace(0)?;
    // Not `case_root`: a private mount namespace would give the runner its mounts.
    let root = canonical(dir).join("root");
    std::fs::create_dir(&root).map_err(|e| e.to_string())?;
    marker(&root, "here")?;
    let p = root_policy_with("read", &root, r#", "limits": {"timeout_ms": 2000}"#)?;
    let prepared = prepare(&p, Profile::Strict, Path::new("/bin/sh")).map_err(|e| e.to_string())?;
    check(
        &format!(
            "the policy's template is held in a user namespace: {:?}",
            prepared.view_build()
        ),
        prepared.view_build() == Some(&ViewBuild::HeldTemplate),
    )?;
    let script = format!(
        "{MOUNTS}; cat {}/marker; echo; ls -a /tmp; tr '\\0' ' ' < /proc/1/cmdline",
        root.display()
    );
    let leased = ViewSource::Leased;
    // What it leaves includes a directory of mode 000, which the runner (root of a user
    // namespace of its own, not of the host) makes readable to empty it.
    let first = seen(
        &p,
        &format!(
            "echo x > /tmp/x; mkdir -p /tmp/d/e; echo x > /tmp/d/e/f; chmod 000 /tmp/d; {script}"
        ),
        "0.3131",
        leased,
    )?;
    let lease = prepared_as_run(&p)?.view_lease();
    check(
        &format!("the runner lends held view namespaces: {lease:?}"),
        lease == Some(ViewLease::Lending),
    )?;
    let runner = inode_of(Path::new("/proc/self/ns/user"));
    let parent = first.parent();
    check(
        &format!(
            "the run's mount and network namespaces belong to the held user namespace {} ({}): \
             not the runner's {runner}, not the command's {}, but the latter's parent {parent}",
            first.owner,
            first.net_owner,
            first.user()
        ),
        first.owner != runner
            && first.owner != first.user()
            && first.owner == parent
            && first.net_owner == parent
            && first.ipc_owner == parent,
    )?;
    let lines = |s: &Seen| {
        stdout(&s.out)
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    check(
        &format!(
            "the run reads its root, and its /proc is its own (pid 1 is its shell): {}",
            show(&first.out)
        ),
        lines(&first).iter().any(|l| l == "here")
            && lines(&first)
                .last()
                .is_some_and(|l| l.starts_with("/bin/sh -c") && l.contains("sleep 0.3131")),
    )?;
    // The first run left /tmp/x: the runner removes it, and the next run has the same
    // namespace without it, as has the run after that.
    let second = seen(&p, &script, "0.3132", leased)?;
    let third = seen(&p, &script, "0.3133", leased)?;
    check(
        &format!(
            "after a run that left a file, the same namespace ({} then {}) without it (in the same \
             user namespace: {}, {}, {}), lent again to the next run ({}), with the same mounts \
             ({}, {}, {}): {}",
            first.mnt(),
            second.mnt(),
            first.user(),
            second.user(),
            third.user(),
            third.mnt(),
            first.mounts(),
            second.mounts(),
            third.mounts(),
            show(&second.out)
        ),
        second.mnt() == first.mnt()
            && third.mnt() == second.mnt()
            && [second.user(), third.user()] == [first.user(); 2]
            && !lines(&second).iter().any(|l| l == "x" || l == "d")
            && second.mounts() == first.mounts()
            && third.mounts() == first.mounts()
            && lines(&third).iter().any(|l| l == "here")
            && lines(&third)
                .last()
                .is_some_and(|l| l.contains("sleep 0.3133")),
    )?;
    // Two runs at once are lent two namespaces, each with a network namespace of its own.
    let (a, b) = two_at_once(&p, ["0.8134", "0.3135"])?;
    check(
        &format!(
            "two runs at once have two held view namespaces ({} and {}), two network \
             namespaces ({} and {}) and two IPC namespaces ({} and {}), all owned by the held \
             user namespace",
            a.mnt(),
            b.mnt(),
            a.net(),
            b.net(),
            a.ipc(),
            b.ipc()
        ),
        a.mnt() != b.mnt()
            && a.net() != b.net()
            && a.ipc() != b.ipc()
            && [a.owner, b.owner, a.net_owner, b.net_owner] == [parent; 4]
            && [a.ipc_owner, b.ipc_owner] == [parent; 2],
    )?;
    user_maps_never_change(&p, parent)?;
    ipc_objects_never_reach_the_next_run(&p)?;
    ptys_never_reach_the_next_run(&p, &root)?;
    scratch_is_kept_only_while_untouched(&p, &root)?;
    // Nothing beside the root shows, and the root is read-only.
    std::fs::write(root.with_file_name("secret"), "secret").map_err(|e| e.to_string())?;
    let tries = sh(
        &p,
        &format!(
            "cat {dir}/secret; echo overwritten > {dir}/root/marker; cat {dir}/root/marker",
            dir = canonical(dir).display()
        ),
    )?;
    check(
        &format!(
            "a run neither reads beside its root nor writes in it: {}",
            show(&tries)
        ),
        !stdout(&tries).contains("secret") && !stdout(&tries).contains("overwritten"),
    )?;
    // The root renamed away and made again: the next run sees the new one (the fingerprint
    // is the runner's, not the helper's that built the template).
    std::fs::rename(&root, root.with_file_name("old")).map_err(|e| e.to_string())?;
    std::fs::create_dir(&root).map_err(|e| e.to_string())?;
    marker(&root, "new")?;
    reads(&p, &root, "new", "a run after the root was made again")?;
    // A copied view is not the held template's: its runs build their view themselves.
    let copied = sh_from(
        &p,
        &format!("cat {}/marker", root.display()),
        ViewSource::Copied,
    )?;
    check(
        &format!(
            "a run asking for a copied view builds it and reads its root: {}",
            show(&copied)
        ),
        stdout(&copied).contains("new"),
    )
}

/// A runner without `CAP_SYS_ADMIN` whose effective uid changed since its policy's template
/// was held in a user namespace (here the host's root as uid 65534, then as 65533): that
/// namespace maps the old uid, and the runner holds no capability in it any more, so the
/// policy is prepared again for the new uid (prepared plans are keyed by the process's ids),
/// with a template of its own, instead of the run falling back to a view built per run.
fn runner_that_changed_its_uid(_dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("needs the host's root, to change its effective uid".into());
    }
    // Readable by both uids: the case directory is root's own.
    let base = tempfile::Builder::new()
        .prefix("toolpolicy-held-uid-")
        .tempdir_in("/tmp")
        .map_err(|e| e.to_string())?;
    let open = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(base.path(), open.clone()).map_err(|e| e.to_string())?;
    let root = canonical(base.path()).join("root");
    std::fs::create_dir(&root).map_err(|e| e.to_string())?;
    std::fs::set_permissions(&root, open).map_err(|e| e.to_string())?;
    marker(&root, "here")?;
    let p = root_policy("read", &root)?;
    let as_uid = |uid: libc::uid_t| {
        // SAFETY: setresuid with the saved uid kept at 0, so the case process can come back.
        if unsafe { libc::setresuid(0, 0, 0) } != 0 || unsafe { libc::setresuid(uid, uid, 0) } != 0
        {
            return Err(format!(
                "setresuid {uid}: {}",
                std::io::Error::last_os_error()
            ));
        }
        // A change of uid makes the process undumpable, its `/proc/self` root's; an
        // unprivileged runner started as itself is dumpable, and writes its maps there.
        // SAFETY: prctl without pointers.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1) };
        Ok(())
    };
    as_uid(65534)?;
    let prepared = prepared_as_run(&p)?;
    check(
        &format!("uid 65534's template is held: {:?}", prepared.view_build()),
        prepared.view_build() == Some(&ViewBuild::HeldTemplate),
    )?;
    reads(&p, &root, "here", "a run as uid 65534 reads its root")?;
    as_uid(65533)?;
    let script = format!("cat {}/marker", root.display());
    let after = seen(&p, &script, "0.3141", ViewSource::Leased)?;
    let parent = after.parent();
    as_uid(0)?;
    check(
        &format!(
            "a run as uid 65533 reads its root in a held view namespace (owned by {}, its user \
             namespace's parent {parent}), not in a view built per run: {}",
            after.owner,
            show(&after.out)
        ),
        stdout(&after.out).contains("here") && after.owner == parent,
    )
}

/// Root with a marker in `root/sub`, and the policy reading `root` (through a template).
fn root_with_sub(dir: &Path) -> Result<(PathBuf, ToolPolicy), String> {
    let root = canonical(dir).join("root");
    let sub = root.join("sub");
    std::fs::create_dir_all(&sub).map_err(|e| e.to_string())?;
    std::fs::write(sub.join("marker"), "under").map_err(|e| e.to_string())?;
    let p = root_policy("read", &root)?;
    Ok((sub, p))
}

/// Mounts a tmpfs on `sub` with the marker "mounted", and checks that the next run reads it.
fn mounted_then_read(p: &ToolPolicy, sub: &Path, what: &str) -> Result<(), String> {
    tmpfs(sub)?;
    marker(sub, "mounted")?;
    reads(p, sub, "mounted", what)
}

/// A runner that enters another mount namespace after a run (as an agent that hides what its
/// tools must not see, in a namespace of its own) and mounts over a directory inside a root
/// there: the next run sees that mount, as a fresh build from its namespace would. The
/// template was built from the old namespace, whose mount table did not change.
fn runner_entered_another_mount_namespace(dir: &Path) -> Result<(), String> {
    private_mounts()?;
    let (sub, p) = root_with_sub(dir)?;
    reads(&p, &sub, "under", "run 1 reads its root")?;
    private_mounts()?;
    mounted_then_read(
        &p,
        &sub,
        "run 2 reads what the runner's new namespace shows",
    )
}

/// A thread of the runner with a mount namespace of its own builds the template there, then
/// mounts over a directory inside a root: its next run sees the mount. The process's first
/// thread, whose mount table did not change, must not stand for it.
fn thread_with_its_own_mount_namespace(dir: &Path) -> Result<(), String> {
    private_mounts()?;
    let (sub, p) = root_with_sub(dir)?;
    let thread = std::thread::spawn(move || -> Result<(), String> {
        private_mounts()?;
        reads(&p, &sub, "under", "run 1 reads its root")?;
        mounted_then_read(
            &p,
            &sub,
            "run 2 reads the mount its thread made in its namespace",
        )
    });
    thread
        .join()
        .map_err(|_| "the thread panicked".to_string())?
}
