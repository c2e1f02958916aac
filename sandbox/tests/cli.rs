//! The `policy-sandbox` command line: the gate's decision is the registry's, usage errors and
//! refusals exit as documented, the command itself is checked under an exec list, scripts run
//! under exec = deny through exactly their interpreter chain, and `run --help` lists what the
//! hardened profile leaves open.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "support/kernel.rs"]
mod kernel;

const CLI: &str = env!("CARGO_BIN_EXE_policy-sandbox");

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn gate(policy: &Path, tool: &str, args: &str) -> Output {
    Command::new(CLI)
        .args(["gate", "--policy"])
        .arg(policy)
        .args(["--tool", tool, "--args", args])
        .output()
        .unwrap()
}

fn denial_code(out: &Output) -> String {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(out), stderr(out)));
    assert_eq!(v["allowed"], false, "{v}");
    v["denial"]["code"].as_str().unwrap_or_default().to_string()
}

#[test]
fn gate_applies_the_constraints_the_registry_applies() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write(
        dir.path(),
        "m.json",
        r#"{"manifest_version": 1, "tools": {
            "never": {"constraints": {"max_invocations": 0}},
            "after": {"constraints": {"only_after": ["fetch"]}},
            "approve": {"constraints": {"requires_approval": true}},
            "free": {"constraints": {"max_invocations": 1}}
        }}"#,
    );
    for (tool, code) in [
        ("never", "constraint.max_invocations"),
        ("after", "constraint.only_after"),
        ("approve", "approval.denied"),
    ] {
        let out = gate(&manifest, tool, "{}");
        assert_eq!(out.status.code(), Some(1), "{tool}: {}", stdout(&out));
        assert_eq!(denial_code(&out), code, "{tool}");
    }
    // Control: a tool whose constraints hold in a fresh invocation is allowed.
    let out = gate(&manifest, "free", "{}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn gate_reads_single_tool_json_and_toml_policies() {
    let dir = tempfile::tempdir().unwrap();
    let json = write(dir.path(), "w.json", r#"{"fs": {"write": ["/out/**"]}}"#);
    let toml = write(dir.path(), "w.toml", "[fs]\nwrite = [\"/out/**\"]\n");
    for policy in [&json, &toml] {
        let ok = gate(policy, "w", r#"{"path": "/out/a.txt"}"#);
        assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
        let denied = gate(policy, "w", r#"{"path": "/etc/passwd"}"#);
        assert_eq!(denied.status.code(), Some(1), "{}", stderr(&denied));
    }
}

/// Issue 14: the manifest's roles reach the CLI gate. A `write` argument is judged against
/// `fs.write` only, so a path that is only readable is denied; before roles the gate judged the
/// same argument as "unknown" and allowed it.
#[test]
fn gate_judges_each_argument_by_its_recorded_role() {
    let dir = tempfile::tempdir().unwrap();
    let entry = |args: &str| {
        format!(
            r#"{{"manifest_version": 1, "tools": {{"report": {{{args}"fs": {{"read": ["/srv/data/**"], "write": ["/srv/out/**"]}}}}}}}}"#
        )
    };
    let write_role = write(
        dir.path(),
        "w.json",
        &entry(r#""args": {"dest": "write"}, "#),
    );
    let read_role = write(
        dir.path(),
        "r.json",
        &entry(r#""args": {"dest": "read"}, "#),
    );
    let no_roles = write(dir.path(), "old.json", &entry(""));
    let into_read_only = r#"{"dest": "/srv/data/summary.md", "body": "x"}"#;

    let out = gate(&write_role, "report", into_read_only);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(denial_code(&out), "fs.path_not_allowed");
    assert!(
        stdout(&out).contains("readable but not writable"),
        "{}",
        stdout(&out)
    );
    let ok = gate(&write_role, "report", r#"{"dest": "/srv/out/summary.md"}"#);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(v["checked"][0]["access"], "write", "{v}");

    // The same path through a `read` argument, or one whose role is unknown, is a read.
    for (policy, access) in [(&read_role, "read"), (&no_roles, "unknown")] {
        let out = gate(policy, "report", into_read_only);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["checked"][0]["access"], access, "{v}");
    }
}

#[test]
fn args_parse_errors_name_the_position_once() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(dir.path(), "w.json", r#"{"fs": {"write": ["/out/**"]}}"#);
    let out = gate(&policy, "w", "{\"path\": }");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--args is not valid JSON"), "{err}");
    assert_eq!(err.matches("column").count(), 1, "{err}");
}

#[test]
fn usage_errors_exit_2_and_refusals_125() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(dir.path(), "p.toml", "net = \"deny\"\n");
    let bogus = Command::new(CLI)
        .args(["run", "--profile", "bogus", "--policy"])
        .arg(&policy)
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(bogus.status.code(), Some(2), "{}", stderr(&bogus));
    assert!(stderr(&bogus).contains("unknown profile `bogus`"));
    assert!(!stderr(&bogus).contains("refused:"));
    let no_cmd = Command::new(CLI)
        .args(["run", "--policy"])
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(no_cmd.status.code(), Some(2));
    // A refusal is 125 with its line.
    let list = write(
        dir.path(),
        "hosts.toml",
        "net = { hosts = [\"a.example:443\"] }\n",
    );
    let refused = Command::new(CLI)
        .args(["run", "--profile", "hardened", "--policy"])
        .arg(&list)
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(125));
    assert!(
        stderr(&refused).starts_with("refused: "),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn hardened_help_lists_what_it_leaves_open() {
    let out = Command::new(CLI)
        .args(["run", "--profile", "hardened", "--help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    for (_, summary, _) in sandbox::plan::HARDENED_LEAVES_OPEN {
        assert!(help.contains(summary), "{summary} missing from:\n{help}");
    }
    // The crate documentation carries the same list.
    let docs = include_str!("../src/lib.rs");
    for (rule, _, _) in sandbox::plan::HARDENED_LEAVES_OPEN {
        assert!(docs.contains(rule), "crate docs do not list `{rule}`");
    }
}

fn strict_available() -> bool {
    if !kernel::user_namespaces() || kernel::landlock_abi() < 6 {
        kernel::missing("user namespaces and Landlock ABI 6 are needed for the strict profile");
        return false;
    }
    true
}

fn run_cli(policy: &Path, profile: &str, cmd: &[&str], path: &str) -> Output {
    Command::new(CLI)
        .args(["run", "--report", "--profile", profile, "--policy"])
        .arg(policy)
        .arg("--")
        .args(cmd)
        .env("PATH", path)
        .output()
        .unwrap()
}

#[test]
fn the_command_itself_is_checked_under_an_exec_list() {
    if !strict_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "p.toml",
        "exec = { allow = [\"wc\", \"cat\"] }\n",
    );
    let out = run_cli(
        &policy,
        "strict",
        &["sh", "-c", "echo RAN"],
        "/usr/bin:/bin",
    );
    assert_eq!(out.status.code(), Some(125), "{}", stdout(&out));
    assert!(!stdout(&out).contains("RAN"));
    let err = stderr(&out);
    assert!(
        err.contains("refused: the command") && err.contains("exec allow-list"),
        "{err}"
    );
    // Control: a listed command runs.
    let ok = run_cli(&policy, "strict", &["cat", "/etc/passwd"], "/usr/bin:/bin");
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
}

/// Scripts under exec = deny: the interpreter chain runs, any other exec is refused, and the
/// report names the chain.
#[test]
fn scripts_run_through_exactly_their_interpreter_chain() {
    use std::os::unix::fs::PermissionsExt;
    if !strict_available() {
        return;
    }
    if !Path::new("/usr/bin/python3").exists() {
        kernel::missing("no /usr/bin/python3");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let py = write(
        dir.path(),
        "tool.py",
        "#!/usr/bin/env python3\nimport subprocess\nprint('PY-RAN')\n\
         try:\n    subprocess.run(['/usr/bin/true'])\n    print('CHILD-RAN')\n\
         except OSError as e:\n    print('child refused', e.errno)\n",
    );
    let sh = write(
        dir.path(),
        "tool.sh",
        "#!/bin/sh\necho SH-RAN\n/usr/bin/true && echo CHILD-RAN\nexit 0\n",
    );
    for script in [&py, &sh] {
        std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let policy = write(
        dir.path(),
        "p.toml",
        &format!(
            "exec = \"deny\"\n[fs]\nread = [\"{}/**\"]\n",
            dir.path().display()
        ),
    );
    // A PATH whose first directory has no python3: the relay's search tries it first.
    let path = "/nonexistent-bin:/usr/local/bin:/usr/bin:/bin";
    for profile in ["strict", "hardened"] {
        for (script, marker) in [(&py, "PY-RAN"), (&sh, "SH-RAN")] {
            let out = run_cli(&policy, profile, &[script.to_str().unwrap()], path);
            let text = stdout(&out);
            let err = stderr(&out);
            assert!(text.contains(marker), "{profile} {script:?}: {text}\n{err}");
            assert!(!text.contains("CHILD-RAN"), "{profile}: {text}");
            let report: serde_json::Value =
                serde_json::from_str(err.lines().next().unwrap()).unwrap();
            let chain = report["rules"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| {
                    r["rule"].as_str().is_some_and(|r| {
                        r.starts_with("exec deny: the command's interpreter chain")
                    })
                })
                .unwrap_or_else(|| panic!("no chain line in {report}"));
            assert_eq!(chain["status"], "exact");
            let rule = chain["rule"].as_str().unwrap();
            if script == &py {
                assert!(
                    rule.contains("/usr/bin/env -> ") && rule.contains("python3"),
                    "{rule}"
                );
            } else {
                assert!(
                    rule.contains(" -> /usr/bin/dash") || rule.contains(" -> /bin/"),
                    "{rule}"
                );
            }
        }
    }
    // Control: the same child exec runs under exec = allow.
    let free = write(
        dir.path(),
        "free.toml",
        &format!("[fs]\nread = [\"{}/**\"]\n", dir.path().display()),
    );
    let out = run_cli(&free, "strict", &[py.to_str().unwrap()], path);
    assert!(stdout(&out).contains("CHILD-RAN"), "{}", stderr(&out));
}

/// A process whose uid is not mapped in its user namespace (`unshare -U` without `-r`) can make
/// no user namespace: its strict run is refused before anything starts, with that reason (not
/// the advice to enable unprivileged user namespaces), and it may still ask for hardened.
#[test]
fn a_runner_whose_uid_is_unmapped_is_refused_strict_with_the_reason() {
    if !strict_available() {
        return;
    }
    let probe = Command::new("unshare").args(["-U", "--", "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        kernel::missing("unshare -U cannot run here (util-linux, or user namespaces)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let policy = write(dir.path(), "p.toml", "[fs]\nread = [\"/etc/**\"]\n");
    let run = |profile: &str| {
        Command::new("unshare")
            .args(["-U", "--"])
            .arg(CLI)
            .args(["run", "--profile", profile, "--policy"])
            .arg(&policy)
            .args(["--", "/bin/cat", "/etc/hostname"])
            .output()
            .unwrap()
    };
    let strict = run("strict");
    assert_eq!(strict.status.code(), Some(125), "{}", stderr(&strict));
    assert!(
        stderr(&strict).contains("is not mapped in its user namespace"),
        "{}",
        stderr(&strict)
    );
    let hardened = run("hardened");
    assert!(hardened.status.success(), "{}", stderr(&hardened));
}

/// An agent out of file descriptors is refused the hardened run before anything starts, with
/// what to do: its open-files limit, named. (The number here leaves room for the command line
/// itself, not for the helper's start.)
#[test]
fn a_runner_out_of_descriptors_is_told_to_raise_its_open_files_limit() {
    if kernel::landlock_abi() < 6 {
        kernel::missing("Landlock ABI 6 is needed for the hardened profile");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "p.toml",
        "exec = \"allow\"\n[fs]\nread = [\"/etc/**\"]\n",
    );
    let script = format!(
        "ulimit -n 10; exec {CLI} run --profile hardened --policy {} -- /bin/true",
        policy.display()
    );
    let out = Command::new("/bin/bash")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("raise its RLIMIT_NOFILE"),
        "{}",
        stderr(&out)
    );
}

/// A runner under a seccomp filter of its own (here the hardened profile's, as a container's
/// would be) is refused the strict profile with that cause, not the advice to enable
/// unprivileged user namespaces, which the host allows; and `check` says the same.
#[test]
fn a_runner_under_a_seccomp_filter_is_told_the_cause_of_a_strict_refusal() {
    if !strict_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let inner = write(dir.path(), "inner.toml", "[fs]\nread = [\"/etc/**\"]\n");
    let outer = write(
        dir.path(),
        "outer.toml",
        &format!(
            "exec = \"allow\"\n[fs]\nread = [\"/etc/**\", \"{}/**\"]\n",
            dir.path().display()
        ),
    );
    let inner = inner.to_str().unwrap();
    let cause = "runs under a seccomp filter of its own";
    let run = [
        "run",
        "--profile",
        "strict",
        "--policy",
        inner,
        "--",
        "/bin/true",
    ];
    for (what, args, code) in [("run", &run[..], 125), ("check", &["check"][..], 0)] {
        let argv: Vec<&str> = std::iter::once(CLI).chain(args.iter().copied()).collect();
        let out = run_cli(&outer, "hardened", &argv, "/usr/bin:/bin");
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(code), "{what}: {said}");
        assert!(said.contains(cause), "{what}: {said}");
    }
}
