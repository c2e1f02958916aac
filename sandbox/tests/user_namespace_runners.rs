//! Runners in a user namespace of their own, where the uid the runner has says nothing of the
//! host's: uid 65534 as root of a user namespace (a rootless container), and the host's root
//! as uid 1000 of one. `RLIMIT_NPROC` turns on the host's uid (the kernel does not enforce it
//! for the host's root); the hardened profile's metadata writes turn on either (a root of the
//! host or of the container owns a system's files, which Landlock leaves open to `chmod`).
//!
//! Root only: both runners are made from root (`unshare`, `setpriv`).

mod common;

use std::time::Duration;

use common::{kernel, users, Profile, Report, Scenario, User};

/// The prefix that runs a command as the host's root with uid and gid 1000 in a user namespace
/// of its own.
const ROOT_AS_1000: [&str; 4] = ["unshare", "--map-user=1000", "--map-group=1000", "--"];

/// Whether this host can make both runners; says why not.
fn runners_available() -> bool {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the runners of this test are made from root");
        return false;
    }
    let probe: Vec<String> = ROOT_AS_1000
        .iter()
        .map(|a| a.to_string())
        .chain(["true".into()])
        .collect();
    if common::run_with_timeout(&probe, Duration::from_secs(10)).code != Some(0)
        || !users().contains(&User::Nobody)
    {
        kernel::missing("unshare --map-user (util-linux 2.38) and setpriv are needed");
        return false;
    }
    true
}

/// `policy-sandbox run --report --policy POLICY --profile PROFILE -- ARGV` after `prefix`.
fn run_as(prefix: &[&str], policy: &std::path::Path, profile: Profile, argv: &[&str]) -> Report {
    let mut full: Vec<String> = prefix.iter().map(|a| a.to_string()).collect();
    full.push(common::binaries().sandbox.display().to_string());
    full.extend(["run", "--report", "--policy"].map(String::from));
    full.push(policy.display().to_string());
    full.extend(["--profile", profile.name(), "--"].map(String::from));
    full.extend(argv.iter().map(|a| a.to_string()));
    common::run_with_timeout(&full, Duration::from_secs(120))
}

/// The prefix that runs a command as uid 65534, root of a user namespace of its own.
fn rootless() -> Vec<String> {
    let mut prefix = User::Nobody.prefix();
    prefix.extend(["unshare", "-r", "--"].map(String::from));
    prefix
}

/// `limits.max_processes` for runners in a user namespace of their own, where no pids cgroup
/// is reachable and the uid the runner has there says nothing of the host's:
/// * uid 65534 as root of a user namespace (a rootless container): the kernel enforces
///   RLIMIT_NPROC on that host uid, so a fork bomb is bounded, in both profiles;
/// * the host's root as uid 1000 of a user namespace: the kernel enforces no RLIMIT_NPROC
///   for it (an earlier version took the uid 1000 for a user it binds, claimed the limit,
///   and let 200 processes start), so the run is refused with that reason.
#[test]
fn a_process_limit_holds_or_is_refused_for_runners_in_user_namespaces() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the runners of this test are made from root");
        return;
    }
    let map_user = common::run_with_timeout(
        &[
            "unshare",
            "--map-user=1000",
            "--map-group=1000",
            "--",
            "true",
        ]
        .map(String::from),
        std::time::Duration::from_secs(10),
    );
    if map_user.code != Some(0) || !users().contains(&User::Nobody) {
        kernel::missing("unshare --map-user (util-linux 2.38) and setpriv are needed");
        return;
    }
    for profile in Profile::available() {
        let scenario = Scenario::new(User::Nobody);
        let policy = scenario.policy(
            "policy",
            &format!("{}max_processes = 16\n", scenario.base_policy()),
        );
        let probe = common::binaries().probe.display().to_string();
        let fork_bomb = [probe.as_str(), "fork-bomb", "200"];
        let rootless = rootless();
        let rootless: Vec<&str> = rootless.iter().map(String::as_str).collect();
        let label = format!("uid 65534 as root of a user namespace, {}", profile.name());
        run_as(&rootless, &policy, profile, &fork_bomb).assert_blocked(&label);
        let root_as_1000 = run_as(&ROOT_AS_1000, &policy, profile, &fork_bomb);
        assert!(
            root_as_1000.code == Some(common::REFUSED_EXIT)
                && root_as_1000.stderr.contains("RLIMIT_NPROC is not enforced"),
            "the host's root as uid 1000, {}: the process limit must be refused: {root_as_1000:?}",
            profile.name()
        );
    }
}

/// Runs `chmod 0666` on a file of `owner` (mode 0600, outside every root) as the runner that
/// `prefix` makes: unconfined first, which must change the mode (the control), then under the
/// hardened profile with a write root, which must not. Returns the hardened run's report.
fn hardened_chmod_is_refused(user: User, prefix: &[&str], owner: u32, what: &str) -> Report {
    use std::os::unix::fs::PermissionsExt;
    let scenario = Scenario::new(user);
    let victim = std::path::PathBuf::from(scenario.path("victim"));
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let reset = || {
        std::fs::write(&victim, "a system's own\n").unwrap();
        std::os::unix::fs::chown(&victim, Some(owner), Some(owner)).unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    };
    let chmod = ["/bin/chmod", "0666", victim.to_str().unwrap()];
    reset();
    let control: Vec<String> = prefix.iter().chain(&chmod).map(|a| a.to_string()).collect();
    let control = common::run_with_timeout(&control, Duration::from_secs(30));
    assert!(
        control.code == Some(0) && mode(&victim) == 0o666,
        "the control: {what} changes the mode unconfined: {control:?}"
    );
    reset();
    let policy = scenario.policy(
        "policy",
        &scenario
            .base_policy()
            .replace("exec = \"deny\"", "exec = \"allow\""),
    );
    let out = run_as(prefix, &policy, Profile::Hardened, &chmod);
    assert!(
        out.code != Some(0) && mode(&victim) == 0o600,
        "{what}: the hardened tool changed the mode of a file outside its roots (now {:o}): \
         {out:?}",
        mode(&victim)
    );
    out
}

/// The hardened profile with a write root leaves `chmod` and its kin open on the files the
/// runner's host uid owns (Landlock up to ABI 7 does not govern them). For the host's root
/// that is every system file, so its filter refuses them, and it must under another uid in a
/// user namespace too: an earlier version took the uid 1000 for a user owning only its own
/// files, and its tool made a root-owned file outside every root world-writable.
#[test]
fn the_hosts_root_under_another_uid_changes_no_files_mode_in_the_hardened_profile() {
    if !runners_available() {
        return;
    }
    let what = "the host's root as uid 1000";
    let out = hardened_chmod_is_refused(User::Root, &ROOT_AS_1000, 0, what);
    assert!(
        out.stderr
            .contains("the runner is root, of the host or of its user namespace"),
        "the report says why the metadata writes are refused: {out:?}"
    );
}

/// Root of a rootless container (uid 65534 on the host, 0 in its user namespace) owns the
/// container's system files, whatever uid the host gives it: the hardened profile refuses
/// its tool every metadata write too. The file here belongs to uid 65534, so to the
/// container's root.
#[test]
fn a_containers_root_changes_no_files_mode_in_the_hardened_profile() {
    if !runners_available() {
        return;
    }
    let prefix = rootless();
    let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
    let what = "root of a rootless container";
    hardened_chmod_is_refused(User::Nobody, &prefix, common::NOBODY, what);
}
