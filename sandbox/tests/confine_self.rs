//! `sandbox::confine_self` against the real kernel.
//!
//! Each case runs in a fresh process: this binary (no libtest harness, so the process has one
//! thread) re-executes itself with the case's name, as the current user (root on CI) and again
//! as uid 65534 through `setpriv`. The case first shows its attacks work unconfined, then
//! confines itself and shows each one blocked, in itself and in a child process, while the
//! declared accesses keep working. The refusal cases show that nothing was applied.
//!
//! Missing kernel features print a reason and skip, unless `TOOLPOLICY_REQUIRE_KERNEL=1`.

#[path = "support/cases.rs"]
mod cases;
#[path = "support/kernel.rs"]
mod kernel;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use policy_runtime::protected::{ProtectedKind, ProtectedPaths};
use policy_runtime::union::union;
use policy_runtime::ToolPolicy;
use sandbox::confine::{confine_self_with, ConfineError};
use sandbox::{Enforcement, Profile};

const CASE_VAR: &str = "CONFINE_SELF_CASE";
const DIR_VAR: &str = "CONFINE_SELF_DIR";
const PORTS_VAR: &str = "CONFINE_SELF_PORTS";

use cases::{check, Case};

const CASES: &[(&str, Case)] = &[
    ("filesystem_and_processes", filesystem_and_processes),
    ("exec_allow_list", exec_allow_list),
    ("tcp_ports", tcp_ports),
    ("protected_paths", protected_paths),
    ("refusals_apply_nothing", refusals_apply_nothing),
    ("threads_are_refused", threads_are_refused),
];

fn main() -> ExitCode {
    if let Some(code) = cases::in_case_process(CASE_VAR, DIR_VAR, CASES, &[]) {
        return code;
    }
    let ready = || {
        if kernel::landlock_abi() < 6 {
            kernel::missing("confine_self needs Landlock ABI 6 (Linux 6.12)");
            return false;
        }
        true
    };
    cases::run_suite(CASES, ready, |name| {
        users()
            .into_iter()
            .map(|nobody| {
                let who = if nobody { "uid 65534" } else { "current user" };
                (format!("{name} ({who})"), run_case(name, nobody))
            })
            .collect()
    })
}

/// `false`: the current user; `true` also uid 65534 when running as root with `setpriv`.
fn users() -> Vec<bool> {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv = Command::new("setpriv")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if root && !setpriv {
        kernel::missing("setpriv is not installed, so there is no uid 65534 pass");
    }
    if root && setpriv {
        vec![false, true]
    } else {
        vec![false]
    }
}

/// Lays out the case's directory and runs the case in a new process of this binary.
fn run_case(name: &str, nobody: bool) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let base = dir.path();
    for d in [
        "data",
        "work",
        "outside",
        "proj/.git/hooks",
        "proj/src",
        "home/.ssh",
    ] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    for (f, text) in [
        ("data/file", "data\n"),
        ("outside/secret", "secret\n"),
        ("proj/.git/config", "[core]\n"),
        ("proj/.git/hooks/pre-push", "#!/bin/sh\n"),
        ("home/.ssh/id_rsa", "key\n"),
        ("home/.bashrc", "# rc\n"),
        ("audit.jsonl", ""),
    ] {
        std::fs::write(base.join(f), text).unwrap();
    }
    // Two listeners: the case may connect to the first only.
    let allowed = TcpListener::bind("127.0.0.1:0").unwrap();
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let ports = format!(
        "{},{}",
        allowed.local_addr().unwrap().port(),
        other.local_addr().unwrap().port()
    );
    let mut cmd = if nobody {
        let status = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(base)
            .status()
            .map_err(|e| e.to_string())?;
        assert!(status.success());
        std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
        c.arg(std::env::current_exe().unwrap());
        c
    } else {
        Command::new(std::env::current_exe().unwrap())
    };
    let out = cmd
        .env(CASE_VAR, name)
        .env(DIR_VAR, base)
        .env(PORTS_VAR, &ports)
        .output()
        .map_err(|e| e.to_string())?;
    drop((allowed, other));
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(())
    } else {
        Err(text)
    }
}

// ---- helpers of the case processes ----

fn policy(json: &str) -> ToolPolicy {
    ToolPolicy::from_json_str("case", json).expect("valid policy")
}

/// The policy of two tools over the case directory: one reads `data`, one writes `work`.
fn two_tools(base: &Path, exec: &str, net: &str) -> ToolPolicy {
    let reader = policy(&format!(
        r#"{{"fs": {{"read": ["{}/data/**"]}}, "net": {net}, "exec": {exec}, "env": "deny"}}"#,
        base.display()
    ));
    let writer = policy(&format!(
        r#"{{"fs": {{"write": ["{}/work/**"]}}, "net": "deny", "exec": "deny", "env": {{"allow": ["PATH", "CONFINE_*"]}}}}"#,
        base.display()
    ));
    union([&reader, &writer])
}

fn protected(base: &Path) -> ProtectedPaths {
    let mut list = ProtectedPaths::defaults(&base.join("proj"), &base.join("home"));
    list.add_file(base.join("audit.jsonl"), ProtectedKind::AuditLog)
        .unwrap();
    list
}

fn denied<T>(what: &str, r: std::io::Result<T>) -> Result<(), String> {
    match r {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => Ok(()),
        Err(e) => Err(format!("{what}: failed, but not as a refusal: {e}")),
        Ok(_) => Err(format!("{what}: succeeded under confinement")),
    }
}

fn allowed<T>(what: &str, r: std::io::Result<T>) -> Result<(), String> {
    r.map(|_| ()).map_err(|e| format!("{what}: {e}"))
}

/// Runs `f` in a forked child; its result as the child's exit status (0: `Ok`).
fn in_child(f: impl FnOnce() -> bool) -> bool {
    // SAFETY: the case process has one thread; the child leaves with _exit.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0);
        if pid == 0 {
            let ok = f();
            libc::_exit(if ok { 0 } else { 1 });
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }
}

fn errno_of(rc: libc::c_long) -> std::io::Result<()> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `unshare(CLONE_NEWUSER)` in a throwaway child; `Ok` when it succeeded.
fn unshare_user_ns() -> std::io::Result<()> {
    if in_child(|| unsafe { libc::unshare(libc::CLONE_NEWUSER) } == 0) {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(libc::EPERM))
    }
}

/// `PTRACE_ATTACH` to a child of ours that sleeps; `Ok` when it succeeded.
fn ptrace_child() -> std::io::Result<()> {
    // SAFETY: the child only pauses; it is killed and reaped below.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            loop {
                libc::pause();
            }
        }
        let rc = libc::ptrace(libc::PTRACE_ATTACH, pid, 0, 0);
        let result = errno_of(rc);
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
        result
    }
}

fn write_in_child(path: PathBuf) -> bool {
    in_child(move || std::fs::write(&path, "x").is_ok())
}

fn confine(policy: &ToolPolicy, base: &Path) -> Result<sandbox::Confinement, String> {
    confine_self_with(policy, Profile::Hardened, &protected(base)).map_err(|e| e.to_string())
}

// ---- the cases ----

/// fs, exec = deny, net = deny, children, ptrace, unshare, env.
fn filesystem_and_processes(base: &Path) -> Result<(), String> {
    let outside = base.join("outside/new");
    // Unconfined, every attack works.
    allowed("unconfined write outside", std::fs::write(&outside, "x"))?;
    std::fs::remove_file(&outside).unwrap();
    allowed(
        "unconfined read outside",
        std::fs::read(base.join("outside/secret")),
    )?;
    allowed("unconfined exec", Command::new("/bin/true").status())?;
    allowed("unconfined ptrace of a child", ptrace_child())?;
    allowed("unconfined unshare(CLONE_NEWUSER)", unshare_user_ns())?;
    allowed(
        "unconfined UDP socket",
        std::net::UdpSocket::bind("127.0.0.1:0"),
    )?;

    let confinement = confine(&two_tools(base, r#""deny""#, r#""deny""#), base)?;
    let report = &confinement.plan;
    check(
        "report: exec deny is exact",
        report
            .rules
            .iter()
            .any(|r| r.rule == "exec deny" && r.enforcement == Enforcement::Exact),
    )?;

    allowed(
        "write in the write root",
        std::fs::write(base.join("work/ok"), "ok"),
    )?;
    allowed(
        "read in the read root",
        std::fs::read(base.join("data/file")),
    )?;
    denied("write outside", std::fs::write(&outside, "x"))?;
    denied("read outside", std::fs::read(base.join("outside/secret")))?;
    denied(
        "write into the read root",
        std::fs::write(base.join("data/file"), "x"),
    )?;
    denied("exec of /bin/true", Command::new("/bin/true").status())?;
    denied(
        "exec through the dynamic loader",
        Command::new("/lib64/ld-linux-x86-64.so.2")
            .arg("/bin/true")
            .status(),
    )?;
    denied("ptrace of a child", ptrace_child())?;
    denied("unshare(CLONE_NEWUSER)", unshare_user_ns())?;
    denied(
        "a UDP socket (net = deny)",
        std::net::UdpSocket::bind("127.0.0.1:0"),
    )?;
    // A child process inherits all of it.
    check(
        "a forked child writes outside",
        !write_in_child(outside.clone()),
    )?;
    check(
        "a forked child writes in the write root",
        write_in_child(base.join("work/child")),
    )?;
    check("nothing was written outside", !outside.exists())?;
    // env: PATH and CONFINE_* kept, everything else gone.
    check(
        "environment filtered",
        std::env::vars().all(|(k, _)| k == "PATH" || k.starts_with("CONFINE_")),
    )?;
    Ok(())
}

/// exec = {allow = [/bin/sh]}: the listed shell runs (a child inherits the fs confinement);
/// an unlisted program does not.
fn exec_allow_list(base: &Path) -> Result<(), String> {
    allowed(
        "unconfined exec of id",
        Command::new("/usr/bin/id").output(),
    )?;
    let confinement = confine(
        &two_tools(base, r#"{"allow": ["/bin/sh"]}"#, r#""deny""#),
        base,
    )?;
    check(
        "report: the exec list is widened (the loader)",
        confinement.plan.rules.iter().any(|r| {
            r.rule.starts_with("exec allow [")
                && matches!(&r.enforcement, Enforcement::Widened { to } if to.contains("ld.so"))
        }),
    )?;
    let script = format!(
        "echo in > {0}/work/from-sh; echo out > {0}/outside/from-sh; /usr/bin/id",
        base.display()
    );
    let out = Command::new("/bin/sh")
        .args(["-c", &script])
        .output()
        .map_err(|e| format!("the listed /bin/sh: {e}"))?;
    check(
        "the shell wrote in the write root",
        std::fs::read_to_string(base.join("work/from-sh")).is_ok_and(|s| s == "in\n"),
    )?;
    check(
        "the shell could not write outside",
        !base.join("outside/from-sh").exists(),
    )?;
    check(
        "the shell could not start an unlisted program",
        out.status.code() == Some(126) || out.status.code() == Some(127),
    )?;
    denied(
        "exec of an unlisted /usr/bin/id",
        Command::new("/usr/bin/id").output(),
    )?;
    Ok(())
}

/// net = {hosts = [127.0.0.1:A]}: TCP connect to port A works, to port B is refused.
fn tcp_ports(base: &Path) -> Result<(), String> {
    let ports: Vec<u16> = std::env::var(PORTS_VAR)
        .unwrap()
        .split(',')
        .map(|p| p.parse().unwrap())
        .collect();
    let (a, b) = (ports[0], ports[1]);
    allowed(
        "unconfined connect to B",
        TcpStream::connect(("127.0.0.1", b)),
    )?;
    let net = format!(r#"{{"hosts": ["127.0.0.1:{a}"]}}"#);
    let confinement = confine(&two_tools(base, r#""deny""#, &net), base)?;
    check(
        "report: the host list is widened to its port",
        confinement.plan.rules.iter().any(|r| r.rule.starts_with("net hosts [")
            && matches!(&r.enforcement, Enforcement::Widened { to } if to.contains(&a.to_string()))),
    )?;
    let mut s = TcpStream::connect(("127.0.0.1", a)).map_err(|e| format!("connect to A: {e}"))?;
    let _ = s.write_all(b"x");
    let mut buf = [0u8; 1];
    let _ = s.set_read_timeout(Some(std::time::Duration::from_millis(10)));
    let _ = s.read(&mut buf);
    denied("connect to B", TcpStream::connect(("127.0.0.1", b)))?;
    denied("bind a TCP port", TcpListener::bind("127.0.0.1:0"))?;
    check(
        "a child connects to B",
        !in_child(move || TcpStream::connect(("127.0.0.1", b)).is_ok()),
    )?;
    Ok(())
}

/// Protected paths outside the write roots stay unwritable; a file opened before confining
/// (the audit log) stays writable through its descriptor, not by a new open.
fn protected_paths(base: &Path) -> Result<(), String> {
    let mut audit = std::fs::OpenOptions::new()
        .append(true)
        .open(base.join("audit.jsonl"))
        .unwrap();
    let confinement = confine(&two_tools(base, r#""deny""#, r#""deny""#), base)?;
    check(
        "report: every protected path is listed and exact",
        confinement.plan.protected.len() == protected(base).entries().len()
            && confinement
                .plan
                .protected
                .iter()
                .all(|p| p.enforcement == Enforcement::Exact && p.write_root.is_none()),
    )?;
    for target in [
        "proj/.git/hooks/pre-commit",
        "proj/.git/hooks/pre-push",
        "proj/.git/config",
        "home/.bashrc",
        "home/.zshrc",
        "home/.ssh/authorized_keys",
        "audit.jsonl",
    ] {
        denied(target, std::fs::write(base.join(target), "evil"))?;
    }
    denied(
        "rename .git away",
        std::fs::rename(base.join("proj/.git"), base.join("proj/old-git")),
    )?;
    allowed(
        "append to the audit log through its descriptor",
        audit.write_all(b"{}\n"),
    )?;
    Ok(())
}

/// Each refusal leaves the process as it was: it still writes outside, executes, reads,
/// holds no NO_NEW_PRIVS.
fn refusals_apply_nothing(base: &Path) -> Result<(), String> {
    let unchanged = |what: &str| -> Result<(), String> {
        // SAFETY: prctl with integers.
        let nnp = unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) };
        check(&format!("{what}: no_new_privs set"), nnp == 0)?;
        allowed(
            &format!("{what}: write outside"),
            std::fs::write(base.join("outside/after"), "x"),
        )?;
        allowed(&format!("{what}: exec"), Command::new("/bin/true").status())?;
        allowed(&format!("{what}: unshare"), unshare_user_ns())
    };
    // A write root that covers protected paths (.git/hooks, .git/config).
    let covering = policy(&format!(
        r#"{{"fs": {{"write": ["{}/proj/**"]}}, "exec": "deny", "net": "deny"}}"#,
        base.display()
    ));
    match confine_self_with(&covering, Profile::Hardened, &protected(base)) {
        Err(ConfineError::Refused {
            reason,
            plan: Some(plan),
        }) => {
            check(
                &format!("reason names .git/hooks: {reason}"),
                reason.contains(".git/hooks"),
            )?;
            check(
                "the report marks the covered paths not enforced",
                plan.protected.iter().any(|p| {
                    p.path.ends_with(".git/config")
                        && matches!(p.enforcement, Enforcement::NotEnforced { .. })
                        && p.write_root.is_some()
                }),
            )?;
        }
        other => return Err(format!("protected paths in a write root: {other:?}")),
    }
    unchanged("after the protected-path refusal")?;
    // A per-run limit, which a process confining itself cannot hold.
    let limited = policy(r#"{"exec": "deny", "limits": {"timeout_ms": 1000}}"#);
    match confine_self_with(&limited, Profile::Hardened, &ProtectedPaths::none()) {
        Err(ConfineError::Refused { reason, .. }) if reason.contains("limits.timeout_ms") => {}
        other => return Err(format!("a declared limit: {other:?}")),
    }
    unchanged("after the limits refusal")?;
    // The strict profile, which needs namespaces.
    match confine_self_with(&policy("{}"), Profile::Strict, &ProtectedPaths::none()) {
        Err(ConfineError::Refused { .. }) => {}
        other => return Err(format!("the strict profile: {other:?}")),
    }
    unchanged("after the strict refusal")
}

/// A second thread would stay unconfined: refused, nothing applied.
fn threads_are_refused(base: &Path) -> Result<(), String> {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        let _ = rx.recv();
    });
    let r = confine_self_with(
        &policy(r#"{"exec": "deny"}"#),
        Profile::Hardened,
        &ProtectedPaths::none(),
    );
    drop(tx);
    t.join().unwrap();
    match r {
        Err(ConfineError::Threads { threads }) if threads >= 2 => {}
        other => return Err(format!("with two threads: {other:?}")),
    }
    allowed(
        "write outside after the refusal",
        std::fs::write(base.join("outside/after"), "x"),
    )
}
