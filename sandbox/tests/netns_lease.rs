//! The strict profile's leased network namespaces (`sandbox::netns`), against the real kernel:
//! a root runner lends each `net = deny` run an empty namespace of its pool, and a runner
//! without `CAP_SYS_ADMIN` over its mounts one of the user namespace that holds its view
//! template (checked first, in a forked child that is root in a user namespace of its own but
//! in the host's mount namespace). Checked here: the run cannot configure it or reach the host
//! through it, namespaces really are reused, and two runs at the same moment never share one
//! (neither reaches the other's abstract socket, and both can take the same name).
//!
//! One test function on purpose: runs of other tests in this binary would take namespaces
//! from the same pool and blur which run had which.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use policy_runtime::ToolPolicy;
use sandbox::netns::{NetnsPerRunWhy, NetnsSource};
use sandbox::{run, Profile, RunOptions, Stdio};

mod common;
use common::bait;
#[path = "support/namespaces.rs"]
mod namespaces;
use namespaces::{inode_of, owner_of, parent_of, pid_running};

const PROBE: &str = env!("CARGO_BIN_EXE_escape-probe");

fn is_root() -> bool {
    // SAFETY: a getter without pointers.
    unsafe { libc::geteuid() == 0 }
}

fn policy(write_root: &Path) -> ToolPolicy {
    let json = format!(
        r#"{{"fs": {{"write": ["{}/**"]}}, "net": "deny", "exec": "deny", "env": "deny"}}"#,
        write_root.display()
    );
    ToolPolicy::from_json_str("netns-lease", &json).expect("policy")
}

/// Runs the probe strictly and returns its result line.
fn probe(policy: &ToolPolicy, args: &[&str]) -> String {
    let mut argv: Vec<OsString> = vec![PROBE.into()];
    argv.extend(args.iter().map(OsString::from));
    let opts = RunOptions::default()
        .profile(Profile::Strict)
        .stdio(Stdio::Capture);
    let out = run(policy, &argv, &opts).unwrap_or_else(|e| panic!("{args:?} refused: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    stdout
        .lines()
        .last()
        .unwrap_or_else(|| {
            panic!(
                "{args:?} printed nothing; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .to_string()
}

fn net_ns_of(status_line: &str) -> String {
    field_of(status_line, "NetNs=")
}

/// The run's network namespace cookie: runs one after the other are compared by it, since the
/// kernel gives a freed namespace's inode number to the next one it makes.
fn net_cookie_of(status_line: &str) -> String {
    let cookie = field_of(status_line, "NetCookie=");
    assert!(cookie.parse::<u64>().is_ok(), "{status_line}");
    cookie
}

fn field_of(status_line: &str, key: &str) -> String {
    status_line
        .split_whitespace()
        .find_map(|f| f.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in {status_line}"))
        .to_string()
}

#[test]
fn strict_runs_lease_empty_namespaces_one_run_at_a_time() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let policy = policy(dir.path());
    let prepared = sandbox::runner::prepare(&policy, Profile::Strict, Path::new(PROBE))
        .expect("prepare strict");
    if !is_root() {
        assert_eq!(
            prepared.netns_source(),
            Some(&NetnsSource::PerRun(NetnsPerRunWhy::NotPrivileged))
        );
        eprintln!("skipped the leased-namespace checks: they need a root runner (not root here)");
        return;
    }
    held_runner(&policy, dir.path());
    assert_eq!(prepared.netns_source(), Some(&NetnsSource::Leased));
    leased_checks(&policy, dir.path(), Owner::Runner);
}

/// Who must own a run's leased network namespace.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Owner {
    /// The runner's user namespace (a root runner's pool).
    Runner,
    /// The parent of the tool's user namespace, which is not the runner's: the user namespace
    /// holding the plan's view template.
    Held,
}

/// [`leased_checks`] for a runner that holds its view template in a user namespace: in a forked
/// child (one thread: no other test runs in this binary) that is root in a user namespace of
/// its own, without a mount namespace of its own.
fn held_runner(policy: &ToolPolicy, dir: &Path) {
    // SAFETY: the child runs the checks and leaves with `_exit`, never returning to libtest.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: getters, and unshare in this one-threaded child.
            let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
            assert_eq!(
                unsafe { libc::unshare(libc::CLONE_NEWUSER) },
                0,
                "unshare: {}",
                std::io::Error::last_os_error()
            );
            for (file, map) in [
                ("setgroups", "deny".to_string()),
                ("uid_map", format!("0 {uid} 1")),
                ("gid_map", format!("0 {gid} 1")),
            ] {
                std::fs::write(format!("/proc/self/{file}"), map).expect(file);
            }
            let prepared = sandbox::runner::prepare(policy, Profile::Strict, Path::new(PROBE))
                .expect("prepare strict");
            assert_eq!(prepared.netns_source(), Some(&NetnsSource::Held));
            leased_checks(policy, dir, Owner::Held);
        }));
        // SAFETY: ends the forked child.
        unsafe { libc::_exit(if checked.is_ok() { 0 } else { 101 }) };
    }
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the held runner's checks failed (its panic is above): status {status:#x}"
    );
}

/// What every leased namespace must hold to, for runs of `policy` (a write root in `dir`).
fn leased_checks(policy: &ToolPolicy, dir: &Path, owner: Owner) {
    let host = std::fs::read_link("/proc/self/ns/net")
        .expect("own namespace")
        .display()
        .to_string();

    // A namespace of its own, not the host's; given back and lent again to the next run.
    let first = probe(policy, &["status"]);
    assert_ne!(
        net_ns_of(&first),
        host,
        "a strict net = deny run must not share the host's namespace"
    );
    let second = probe(policy, &["status"]);
    assert_eq!(
        net_cookie_of(&first),
        net_cookie_of(&second),
        "a run that ended with no socket left gives its namespace back for the next run"
    );

    // Nobody in the run can configure it: the namespace's owner is the runner's user namespace.
    let line = probe(policy, &["lo-up"]);
    assert!(line.starts_with("BLOCKED lo-up: errno=1 EPERM"), "{line}");
    let line = probe(policy, &["raw-socket"]);
    assert!(
        line.starts_with("BLOCKED raw-socket: errno=1 EPERM"),
        "{line}"
    );
    // Nor change the namespace's sysctls, which would outlive the run (the tool's uid may be
    // the host's root when the runner is; its /proc is read-only and Landlock grants no write).
    for sysctl in [
        "/proc/sys/net/core/somaxconn",
        "/proc/sys/net/ipv4/ip_forward",
        "/proc/sys/net/ipv4/ping_group_range",
    ] {
        let line = probe(policy, &["write", sysctl]);
        assert!(line.starts_with("BLOCKED write"), "{sysctl}: {line}");
    }
    // And nothing of the host answers through it.
    let (port, hits) = bait::tcp_listener(false);
    let before = hits.count();
    let line = probe(policy, &["tcp4", &port.to_string()]);
    assert!(line.starts_with("BLOCKED tcp4"), "{line}");
    hits.unchanged_since(before, "the host's TCP listener")
        .expect("no connection from the sandbox");
    let (port, hits) = bait::udp_echo(false);
    let before = hits.count();
    let line = probe(policy, &["udp4", &port.to_string()]);
    assert!(line.starts_with("BLOCKED udp4"), "{line}");
    hits.unchanged_since(before, "the host's UDP echo")
        .expect("no datagram from the sandbox");

    // Two runs at the same moment: A holds an abstract name; B cannot reach it and can take
    // the same name, because B was lent another namespace.
    let name = format!("toolpolicy-netns-lease-{}", std::process::id());
    // Each pass its own files: the held pass's are still there when the runner's starts.
    let ready = dir.join(format!("ready-{owner:?}"));
    let holder = {
        let (policy, name, ready) = (policy.clone(), name.clone(), ready.clone());
        std::thread::spawn(move || {
            probe(
                &policy,
                &["abstract-hold", &name, &ready.display().to_string(), "3"],
            )
        })
    };
    let start = Instant::now();
    while !ready.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "run A never started listening"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The tool's own user namespace is not the runner's, and its network namespace belongs to
    // the runner's: the kernel says so (a namespace made per run would be the tool's).
    let pid = pid_running(&name).expect("run A's process on the host");
    let own_user = inode_of(Path::new("/proc/self/ns/user"));
    assert_ne!(
        inode_of(Path::new(&format!("/proc/{pid}/ns/user"))),
        own_user,
        "the tool has a user namespace of its own"
    );
    let tool_user = Path::new(&format!("/proc/{pid}/ns/user")).to_path_buf();
    let expected = match owner {
        Owner::Runner => own_user,
        Owner::Held => parent_of(&tool_user),
    };
    assert!(
        owner == Owner::Runner || expected != own_user,
        "a held user namespace is not the runner's"
    );
    assert_eq!(
        owner_of(Path::new(&format!("/proc/{pid}/ns/net"))),
        expected,
        "the leased namespace belongs to the {owner:?} user namespace, over which the tool holds \
         no capability"
    );
    let line = probe(policy, &["unix-abstract", &name]);
    assert!(
        line.starts_with("BLOCKED unix-abstract"),
        "a concurrent run reached another run's abstract socket: {line}"
    );
    let ready_b = dir.join(format!("ready-b-{owner:?}"));
    let line = probe(
        policy,
        &["abstract-hold", &name, &ready_b.display().to_string(), "0"],
    );
    assert!(
        line.starts_with("SUCCEEDED abstract-hold"),
        "a concurrent run found another run's name taken (a shared namespace): {line}"
    );
    let held = holder.join().expect("run A");
    assert!(held.starts_with("SUCCEEDED abstract-hold"), "{held}");
    let a_ns = held.rsplit(" in ").next().unwrap_or_default().to_string();
    let b_ns = line.rsplit(" in ").next().unwrap_or_default().to_string();
    assert_ne!(a_ns, b_ns, "two concurrent runs shared a namespace");
    assert_ne!(a_ns, host);
    assert_ne!(b_ns, host);
}
