//! Common benign work that must not be denied: POSIX shared memory and semaphores (Python's
//! `multiprocessing`), ptys, and git with a home directory the tool may not read.
//!
//! Each test also checks what the profile that cannot offer the feature does instead, as its
//! report says.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{kernel, probe, sandboxed, users, Mode, Profile, Report, Scenario, User};

const HELPER: &str = env!("CARGO_BIN_EXE_policy-sandbox");

/// The report's rule names.
fn rules(out: &Report) -> Vec<String> {
    let report = out
        .stderr
        .lines()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .unwrap_or_else(|| panic!("no report on stderr:\n{}", out.stderr));
    report["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap().to_string())
        .collect()
}

/// A Python 3 that is a real program (not a shim that needs a home directory), if any.
fn python3() -> Option<PathBuf> {
    ["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| {
            std::fs::canonicalize(p).is_ok_and(|c| {
                sandbox::runner::interpreter_of(&c)
                    .is_some_and(|i| i.to_string_lossy().contains("ld-linux"))
            })
        })
}

fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

#[test]
fn posix_shared_memory_and_semaphores_work_in_a_private_dev_shm() {
    for user in users() {
        let name = unique("benign-shm");
        probe(user, Mode::Bare, &["posix-shm", &name]).assert_succeeded("POSIX shm on the host");
        for profile in Profile::available() {
            let s = Scenario::new(user);
            let policy = s.policy("shm", &s.base_policy());
            let probe_path = common::binaries().probe.display().to_string();
            // A segment of the host's must not be visible: create one the tool looks for.
            let host_segment = Path::new("/dev/shm").join(unique("benign-host"));
            std::fs::write(&host_segment, "host").unwrap();
            let out = sandboxed(user, &policy, profile, &[&probe_path, "posix-shm", &name]);
            let seen = sandboxed(
                user,
                &policy,
                profile,
                &[&probe_path, "read", host_segment.to_str().unwrap()],
            );
            std::fs::remove_file(&host_segment).unwrap();
            let label = format!("[as {}, {}]", user.name(), profile.name());
            match profile {
                Profile::Strict => {
                    out.assert_succeeded(&format!("POSIX shm and semaphores {label}"));
                    seen.assert_blocked(&format!("the host's /dev/shm is hidden {label}"));
                }
                Profile::Hardened => {
                    // No mount namespace, so no private /dev/shm: the host's stays closed, and
                    // the report says that shared memory fails.
                    out.assert_blocked(&format!(
                        "hardened keeps the host's /dev/shm closed {label}"
                    ));
                    seen.assert_blocked(&format!("the host's /dev/shm is closed {label}"));
                    assert!(
                        rules(&out)
                            .iter()
                            .any(|r| r.starts_with("host /dev/shm and ptys closed")),
                        "{}",
                        out.stderr
                    );
                }
            }
            assert!(
                !Path::new("/dev/shm").join(&name).exists(),
                "the tool's segment leaked to the host {label}"
            );
        }
    }
}

#[test]
fn python_multiprocessing_runs_in_strict() {
    let Some(python) = python3() else {
        eprintln!("skipped: no python3 program (the escape-probe posix-shm test covers the calls)");
        return;
    };
    if !Profile::available().contains(&Profile::Strict) {
        return;
    }
    let s = Scenario::new(User::Root);
    let policy = s.policy("py", &s.base_policy());
    let script = "import multiprocessing as m\n\
                  q = m.Queue(); l = m.Lock()\n\
                  p = m.Process(target=q.put, args=(41,)); p.start()\n\
                  with l: print(q.get() + 1)\n\
                  p.join()\n";
    let out = sandboxed(
        User::Root,
        &policy,
        Profile::Strict,
        &[python.to_str().unwrap(), "-c", script],
    );
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.stdout, "42\n");
}

#[test]
fn a_pty_can_be_opened_in_strict() {
    for user in users() {
        probe(user, Mode::Bare, &["pty"]).assert_succeeded("a pty on the host");
        for profile in Profile::available() {
            let s = Scenario::new(user);
            let policy = s.policy("pty", &s.base_policy());
            let probe_path = common::binaries().probe.display().to_string();
            let out = sandboxed(user, &policy, profile, &[&probe_path, "pty"]);
            let label = format!("[as {}, {}]", user.name(), profile.name());
            match profile {
                Profile::Strict => {
                    out.assert_succeeded(&format!("a pty {label}"));
                    // The sandbox's own devpts: its first pty, whatever the host has open.
                    assert!(out.stdout.contains("/dev/pts/0"), "{}", out.stdout);
                    // And the devpts instance a lent view namespace holds, in a second run.
                    let lent = probe(user, Mode::Lent(&policy, profile), &["pty"]);
                    lent.assert_lent(&format!("a pty {label}, lent"), profile);
                    lent.assert_succeeded(&format!("a pty {label}, lent"));
                    assert!(lent.stdout.contains("/dev/pts/0"), "{}", lent.stdout);
                }
                Profile::Hardened => {
                    out.assert_blocked(&format!("hardened keeps the host's ptys closed {label}"));
                    assert!(rules(&out)
                        .iter()
                        .any(|r| r.starts_with("host /dev/shm and ptys closed")));
                }
            }
        }
    }
}

#[test]
fn script_runs_a_command_on_a_pty_in_strict() {
    let Some(script) = sandbox::plan::resolve_program(Path::new("script"), None) else {
        eprintln!("skipped: util-linux `script` is not installed (the probe's pty test covers it)");
        return;
    };
    if !Profile::available().contains(&Profile::Strict) {
        return;
    }
    let policy = policy_runtime::ToolPolicy::from_toml_str(
        "script.toml",
        "net = \"deny\"\nexec = \"allow\"\nenv = { allow = [\"PATH\", \"SHELL\"] }\n",
    )
    .unwrap();
    let argv: Vec<OsString> = vec![
        script.into(),
        "-qc".into(),
        "echo on-a-tty; tty".into(),
        "/dev/null".into(),
    ];
    let env = vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("SHELL".into(), "/bin/sh".into()),
    ];
    let out = sandbox::run(
        &policy,
        &argv,
        &sandbox::RunOptions::default().helper(HELPER).env(env),
    )
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("on-a-tty") && stdout.contains("/dev/pts/"),
        "{stdout}"
    );
}

#[test]
fn hardened_points_an_unreadable_home_at_the_scratch_directory() {
    let Some(git) = sandbox::plan::resolve_program(Path::new("git"), None) else {
        eprintln!("skipped: git is not installed");
        return;
    };
    if kernel::landlock_abi() < sandbox::plan::FULL_LANDLOCK_ABI as i64 {
        kernel::missing("Landlock ABI 6 for the hardened profile");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(home.join(".gitconfig"), "[user]\n\tname = host-user\n").unwrap();
    let git_in = |args: &[&str]| {
        let ok = Command::new(&git)
            .args(args)
            .current_dir(&repo)
            .env("HOME", &home)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git_in(&["init", "-q", "."]);
    std::fs::write(repo.join("a"), "a\n").unwrap();
    git_in(&["add", "a"]);

    let toml = format!("net = \"deny\"\n[fs]\nread = [\"{}/**\"]\n", repo.display());
    let policy = policy_runtime::ToolPolicy::from_toml_str("git.toml", &toml).unwrap();
    let env: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("HOME".into(), home.clone().into()),
        ("XDG_CONFIG_HOME".into(), home.join(".config").into()),
        ("ORIG_HOME".into(), home.clone().into()),
    ];
    let script = "cat \"$ORIG_HOME/.gitconfig\" >/dev/null 2>&1 && echo HOME-READABLE; \
                  echo \"home=$HOME xdg=$XDG_CONFIG_HOME tmp=$TMPDIR\"; \
                  git status --short && git config --list >/dev/null && echo GIT-OK";
    let out = sandbox::run(
        &policy,
        &["/bin/sh".into(), "-c".into(), script.into()],
        &sandbox::RunOptions::default()
            .helper(HELPER)
            .profile(sandbox::Profile::Hardened)
            .cwd(&repo)
            .env(env),
    )
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The home really is closed to the tool (this is what made git abort)...
    assert!(!stdout.contains("HOME-READABLE"), "{stdout}");
    // ...and HOME and XDG_CONFIG_HOME point at the scratch directory, so git works.
    let line = stdout.lines().find(|l| l.starts_with("home=")).unwrap();
    let fields: Vec<&str> = line
        .split(' ')
        .map(|kv| kv.split_once('=').unwrap().1)
        .collect();
    assert_eq!(fields[0], fields[2], "{line}");
    assert_eq!(fields[1], fields[2], "{line}");
    assert!(
        stdout.contains("A  a") && stdout.contains("GIT-OK"),
        "{stdout}\n{stderr}"
    );

    // A HOME inside a root is left as it is.
    let toml = format!(
        "net = \"deny\"\n[fs]\nread = [\"{}/**\"]\n",
        dir.path().display()
    );
    let policy = policy_runtime::ToolPolicy::from_toml_str("home.toml", &toml).unwrap();
    let out = sandbox::run(
        &policy,
        &["/bin/sh".into(), "-c".into(), "echo $HOME".into()],
        &sandbox::RunOptions::default()
            .helper(HELPER)
            .profile(sandbox::Profile::Hardened)
            .env(vec![("HOME".into(), home.clone().into())]),
    )
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        home.to_str().unwrap()
    );
}
