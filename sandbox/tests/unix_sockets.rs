//! Host pathname unix sockets inside a root (issue: a host service's socket in a read or write
//! root was reachable under net = deny). Each attack first reaches the host listener
//! unconfined, then is blocked in the strict profile under net = deny and under a host list,
//! and the listener is checked for traces; the tool's own sockets keep working.

use std::ffi::OsString;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::{Path, PathBuf};

use policy_runtime::ToolPolicy;
use sandbox::runner::{run, RunOptions};
use sandbox::Profile;

#[path = "support/kernel.rs"]
mod kernel;

const HELPER: &str = env!("CARGO_BIN_EXE_policy-sandbox");
const PYTHON: &str = "/usr/bin/python3";

/// Each argument `KIND:PATH` is one attempt; one line `KIND PATH OK|ERR errno` each.
const PROBE: &str = r#"
import os, socket, sys
def attempt(kind, path):
    if kind == "stream":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
    elif kind == "dgram":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.sendto(b"escaped", path)
    elif kind == "pair-dgram":
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        a.sendto(b"escaped", path)
    elif kind == "link":
        os.symlink(path, "/tmp/link.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect("/tmp/link.sock")
    elif kind == "own":
        l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        l.bind(path); l.listen(1)
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(path); a, _ = l.accept(); c.sendall(b"ping")
        assert a.recv(4) == b"ping"
        os.chdir(os.path.dirname(path))
        r = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        r.connect(os.path.basename(path)); l.accept()
    elif kind == "pair":
        a, b = socket.socketpair()
        a.sendall(b"pong"); assert b.recv(4) == b"pong"
for arg in sys.argv[1:]:
    kind, _, path = arg.partition(":")
    try:
        attempt(kind, path)
        print(kind, path, "OK", flush=True)
    except OSError as e:
        print(kind, path, "ERR", e.errno, flush=True)
"#;

fn usable() -> bool {
    if !Path::new(PYTHON).exists() {
        kernel::missing("no /usr/bin/python3 for the socket probe");
        return false;
    }
    if !kernel::user_namespaces() || kernel::landlock_abi() < 6 {
        kernel::missing("user namespaces and Landlock ABI 6 are needed for the strict profile");
        return false;
    }
    true
}

/// Host listeners (stream and datagram) inside a read root and a write root.
struct Host {
    dir: tempfile::TempDir,
    streams: Vec<(PathBuf, UnixListener)>,
    dgrams: Vec<(PathBuf, UnixDatagram)>,
}

impl Host {
    fn new() -> Host {
        let dir = tempfile::tempdir().unwrap();
        let mut host = Host {
            dir,
            streams: Vec::new(),
            dgrams: Vec::new(),
        };
        for root in ["data", "work"] {
            let d = host.dir.path().join(root);
            std::fs::create_dir(&d).unwrap();
            let s = d.join("daemon.sock");
            let l = UnixListener::bind(&s).unwrap();
            l.set_nonblocking(true).unwrap();
            host.streams.push((s, l));
            let g = d.join("log.sock");
            let u = UnixDatagram::bind(&g).unwrap();
            u.set_nonblocking(true).unwrap();
            host.dgrams.push((g, u));
        }
        host
    }

    fn root(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn policy(&self, net: &str) -> ToolPolicy {
        let toml = format!(
            "net = {net}\n[fs]\nread = [\"{}/**\"]\nwrite = [\"{}/**\"]\n",
            self.root("data"),
            self.root("work")
        );
        ToolPolicy::from_toml_str("unix.toml", &toml).unwrap()
    }

    /// Connections and datagrams that reached the host listeners since the last call.
    fn traces(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (path, l) in &self.streams {
            while l.accept().is_ok() {
                found.push(format!("connection to {}", path.display()));
            }
        }
        for (path, u) in &self.dgrams {
            let mut buf = [0u8; 64];
            while u.recv(&mut buf).is_ok() {
                found.push(format!("datagram to {}", path.display()));
            }
        }
        found
    }

    fn attacks(&self) -> Vec<String> {
        let mut args = Vec::new();
        for (path, _) in &self.streams {
            args.push(format!("stream:{}", path.display()));
        }
        for (path, _) in &self.dgrams {
            args.push(format!("dgram:{}", path.display()));
            args.push(format!("pair-dgram:{}", path.display()));
        }
        args
    }
}

fn probe_argv(args: &[String]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![PYTHON.into(), "-c".into(), PROBE.into()];
    argv.extend(args.iter().map(OsString::from));
    argv
}

/// Runs the probe; the result line of each attempt.
fn outcomes(policy: &ToolPolicy, args: &[String], opts: &RunOptions) -> Vec<String> {
    let out = run(policy, &probe_argv(args), opts).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    assert_eq!(
        lines.len(),
        args.len(),
        "probe output: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    lines
}

fn strict() -> RunOptions {
    RunOptions::default()
        .helper(HELPER)
        .profile(Profile::Strict)
}

#[test]
fn host_sockets_in_roots_are_reachable_unconfined() {
    if !usable() {
        return;
    }
    let host = Host::new();
    let attacks = host.attacks();
    let lines = outcomes(
        &host.policy("\"deny\""),
        &attacks,
        &RunOptions::default().unconfined(),
    );
    for line in &lines {
        assert!(
            line.ends_with(" OK"),
            "control: unconfined must reach it: {line}"
        );
    }
    assert_eq!(host.traces().len(), attacks.len(), "{lines:?}");
}

fn assert_blocked_under(net: &str) {
    let host = Host::new();
    let attacks = host.attacks();
    let mut args = attacks.clone();
    args.push(format!("link:{}", host.streams[0].0.display()));
    let lines = outcomes(&host.policy(net), &args, &strict());
    for line in &lines {
        assert!(line.contains(" ERR "), "net = {net}: not blocked: {line}");
    }
    // Stream connects are refused by the supervisor (EACCES); datagram sockets cannot be made.
    assert!(
        lines[0].ends_with(&format!("ERR {}", libc::EACCES)),
        "{lines:?}"
    );
    assert!(
        lines[2].ends_with(&format!("ERR {}", libc::EPERM)),
        "{lines:?}"
    );
    assert_eq!(host.traces(), Vec::<String>::new(), "net = {net}");
}

#[test]
fn host_sockets_in_roots_are_blocked_under_net_deny() {
    if usable() {
        assert_blocked_under("\"deny\"");
    }
}

#[test]
fn host_sockets_in_roots_are_blocked_under_a_host_list() {
    if usable() {
        assert_blocked_under("{ hosts = [\"example.com:443\"] }");
    }
}

#[test]
fn the_tools_own_sockets_keep_working() {
    if !usable() {
        return;
    }
    let host = Host::new();
    // exec = deny shares the supervisor's listener with connect.
    for net in [
        "\"deny\"",
        "{ hosts = [\"example.com:443\"] }",
        "\"deny\"\nexec = \"deny\"",
    ] {
        let args = vec!["own:/tmp/own.sock".to_string(), "pair:".to_string()];
        let lines = outcomes(&host.policy(net), &args, &strict());
        assert_eq!(
            lines,
            vec!["own /tmp/own.sock OK".to_string(), "pair  OK".to_string()],
            "net = {net}"
        );
    }
}

#[test]
fn the_report_names_the_supervision() {
    if !usable() {
        return;
    }
    let host = Host::new();
    let out = run(&host.policy("\"deny\""), &probe_argv(&[]), &strict()).unwrap();
    let rule = out
        .plan
        .rules
        .iter()
        .find(|r| r.rule == "host pathname unix sockets inside the roots unreachable")
        .expect("a report line for pathname sockets");
    assert_eq!(rule.enforcement, sandbox::Enforcement::Exact);
    assert!(rule.by.iter().any(|b| b.contains("user-notify connect")));
}

/// The same attack from an unprivileged runner (uid 65534 through `setpriv`): the supervisor
/// needs no privilege of its own, since the runner owns the sandbox's user namespace.
#[test]
fn host_sockets_are_blocked_for_an_unprivileged_runner() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;
    if !usable() {
        return;
    }
    // SAFETY: geteuid takes no argument.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/bin/setpriv").exists() {
        kernel::missing("running as another user needs root and setpriv");
        return;
    }
    let host = Host::new();
    let world = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    world(host.dir.path(), 0o755);
    world(&host.dir.path().join("data"), 0o755);
    world(&host.dir.path().join("work"), 0o777);
    for (path, _) in &host.streams {
        world(path, 0o777);
    }
    let as_nobody = |argv: &[OsString], policy: Option<&Path>| {
        let mut cmd = Command::new("/usr/bin/setpriv");
        cmd.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"]);
        if let Some(policy) = policy {
            cmd.args([HELPER, "run", "--policy"]).arg(policy).arg("--");
        }
        let out = cmd.args(argv).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let args = vec![format!("stream:{}", host.streams[0].0.display())];
    let argv = probe_argv(&args);
    // Control: the unprivileged user reaches the socket unconfined.
    assert!(as_nobody(&argv, None).ends_with(" OK\n"));
    assert_eq!(host.traces().len(), 1);
    let policy = host.dir.path().join("p.toml");
    std::fs::write(
        &policy,
        format!(
            "net = \"deny\"\n[fs]\nread = [\"{}/**\"]\nwrite = [\"{}/**\"]\n",
            host.root("data"),
            host.root("work")
        ),
    )
    .unwrap();
    world(&policy, 0o644);
    let confined = as_nobody(&argv, Some(&policy));
    assert!(
        confined.ends_with(&format!(" ERR {}\n", libc::EACCES)),
        "{confined}"
    );
    assert_eq!(host.traces(), Vec::<String>::new());
    let own = as_nobody(
        &probe_argv(&["own:/tmp/own.sock".to_string()]),
        Some(&policy),
    );
    assert_eq!(own, "own /tmp/own.sock OK\n");
}
