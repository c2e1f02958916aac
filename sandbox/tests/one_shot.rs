//! A process's only run ([`RunOptions::one_shot`], as `policy-sandbox run` makes it): the
//! hardened profile's zygote is a fork of the caller when the caller has one thread, and an
//! exec'd helper otherwise. The fork holds a copy of the caller's memory: these cases show that
//! the command cannot read it, that the zygote ends with its caller, and which origin each
//! caller gets (the zygote's command line tells them apart).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use policy_runtime::ToolPolicy;
use sandbox::runner::{run, RunOptions, Stdio};
use sandbox::Profile;

#[path = "support/kernel.rs"]
mod kernel;

const CLI: &str = env!("CARGO_BIN_EXE_policy-sandbox");
const PYTHON: &str = "/usr/bin/python3";

/// Reads, from the command, its parent's (the zygote's) environment, command line and memory,
/// and the kernel's answer to each: `NAME OK <bytes>` or `NAME ERR <errno>`.
const PROBE: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = os.getppid()
print("zygote", pid, flush=True)
def read(path):
    return open(path, "rb").read()
def mem():
    # The first readable mapping of the zygote, read through /proc/PID/mem.
    with open("/proc/%d/maps" % pid) as maps:
        start = int(maps.readline().split("-")[0], 16)
    with open("/proc/%d/mem" % pid, "rb") as m:
        m.seek(start)
        return m.read(64)
def vm_readv():
    buf = ctypes.create_string_buffer(64)
    class iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    local = iovec(ctypes.cast(buf, ctypes.c_void_p), 64)
    try:
        with open("/proc/%d/maps" % pid) as maps:
            start = int(maps.readline().split("-")[0], 16)
    except OSError:
        start = 0x400000  # The refusal comes before the address is looked at.
    remote = iovec(start, 64)
    n = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if n < 0:
        raise OSError(ctypes.get_errno(), "process_vm_readv")
    return buf.raw[:n]
for name, call in [("environ", lambda: read("/proc/%d/environ" % pid)),
                   ("mem", mem), ("process_vm_readv", vm_readv)]:
    try:
        got = call()
        print(name, "OK", len(got), b"TOOLPOLICY_ONE_SHOT_SECRET" in got, flush=True)
    except OSError as e:
        print(name, "ERR", e.errno, flush=True)
"#;

fn usable() -> bool {
    if !kernel::supports(Profile::Hardened) {
        kernel::missing("the hardened profile is not enforceable on this host");
        return false;
    }
    if !Path::new(PYTHON).exists() {
        kernel::missing("python3 is needed for the probe");
        return false;
    }
    true
}

fn policy(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("policy.toml");
    let text = format!(
        "net = \"deny\"\nexec = \"deny\"\nenv = \"deny\"\n[fs]\nread = [\"{}/**\"]\n",
        dir.display()
    );
    std::fs::write(&p, text).unwrap();
    p
}

/// The zygote's pid from the probe's output, and the probe's line for `name`.
fn parse(out: &str) -> (u32, impl Fn(&str) -> String + '_) {
    let pid = out
        .lines()
        .find_map(|l| l.strip_prefix("zygote "))
        .unwrap_or_else(|| panic!("no zygote line in {out:?}"))
        .trim()
        .parse()
        .unwrap();
    (pid, move |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} line in {out:?}"))
            .to_string()
    })
}

fn cmdline(pid: u32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/cmdline")).ok()
}

/// `policy-sandbox run`, a process of one thread, forks its zygote: the zygote's command line
/// is the command's own, and its environment holds the caller's secret (the control: a reader
/// with access gets it). The command, its child, reads none of it: Landlock refuses it ptrace
/// access to a process outside its domain (`/proc/PID/environ` and `mem`), and the filter
/// refuses `process_vm_readv`.
#[test]
fn the_forked_zygote_serves_and_its_memory_stays_out_of_the_commands_reach() {
    if !usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let probe_only = dir.path().join("probe_only.py");
    std::fs::write(&probe_only, PROBE).unwrap();
    let probe = dir.path().join("probe.py");
    // Then the probe waits for a file, so that the zygote is alive when it is examined.
    let wait = dir.path().join("go");
    let script = format!(
        "{PROBE}\nimport time\nwhile not os.path.exists({:?}):\n    time.sleep(0.02)\n",
        wait.display()
    );
    std::fs::write(&probe, script).unwrap();
    let mut child = Command::new(CLI)
        .args(["run", "--profile", "hardened", "--policy"])
        .arg(policy(dir.path()))
        .arg("--")
        .args([PYTHON, probe.to_str().unwrap()])
        .env("TOOLPOLICY_ONE_SHOT_SECRET", "s3cr3t")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The probe's lines come before it waits; read them as they come.
    let mut stdout = child.stdout.take().unwrap();
    let mut out = String::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !out.contains("process_vm_readv") && Instant::now() < deadline {
        let mut buf = [0u8; 4096];
        let n = std::io::Read::read(&mut stdout, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let (zygote, line) = parse(&out);
    // The controls, read from outside: the zygote is the caller's fork (its command line),
    // and its memory holds the caller's environment.
    let zygote_cmdline = cmdline(zygote).expect("the zygote is alive");
    let environ = std::fs::read(format!("/proc/{zygote}/environ")).unwrap();
    std::fs::write(&wait, "").unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{out}{err}");
    assert!(
        zygote_cmdline.starts_with(CLI.as_bytes())
            && zygote_cmdline
                .windows(b"--policy".len())
                .any(|w| w == b"--policy"),
        "not a fork of the command: {:?}",
        String::from_utf8_lossy(&zygote_cmdline)
    );
    assert!(
        environ
            .windows(b"TOOLPOLICY_ONE_SHOT_SECRET".len())
            .any(|w| w == b"TOOLPOLICY_ONE_SHOT_SECRET"),
        "control: the fork holds its caller's environment"
    );
    // The probe's control: bare, under a parent that holds the secret, it reads all three.
    let bare = Command::new(PYTHON)
        .args([
            "-c",
            "import subprocess, sys; subprocess.run([sys.executable, sys.argv[1]])",
        ])
        .arg(&probe_only)
        .env("TOOLPOLICY_ONE_SHOT_SECRET", "s3cr3t")
        .output()
        .unwrap();
    let bare = String::from_utf8_lossy(&bare.stdout).into_owned();
    let (_, bare_line) = parse(&bare);
    for name in ["environ", "mem", "process_vm_readv"] {
        assert!(bare_line(name).starts_with("OK"), "control {name}: {bare}");
        assert!(line(name).starts_with("ERR"), "{name}: {}", line(name));
    }
}

/// The forked zygote ends with its caller: nothing of the run outlives `policy-sandbox run`.
#[test]
fn the_forked_zygote_ends_with_its_caller() {
    if !usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe.py");
    std::fs::write(&probe, "import os\nprint('zygote', os.getppid())\n").unwrap();
    let out = Command::new(CLI)
        .args(["run", "--profile", "hardened", "--policy"])
        .arg(policy(dir.path()))
        .arg("--")
        .args([PYTHON, probe.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (zygote, _) = parse(&text);
    let deadline = Instant::now() + Duration::from_secs(5);
    // Gone, or its pid reused by an unrelated process.
    while cmdline(zygote).is_some_and(|c| c.starts_with(CLI.as_bytes())) {
        assert!(
            Instant::now() < deadline,
            "the zygote {zygote} outlived its caller"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A caller of several threads (this test process) never forks: its one-shot run's zygote is
/// the exec'd helper, whose command line is the helper's hidden subcommand and whose
/// environment is empty.
#[test]
fn a_caller_of_several_threads_execs_its_zygote() {
    if !usable() {
        return;
    }
    let _other = std::thread::spawn(|| std::thread::sleep(Duration::from_secs(30)));
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe.py");
    std::fs::write(&probe, "import os\nprint('zygote', os.getppid())\n").unwrap();
    let text = std::fs::read_to_string(policy(dir.path())).unwrap();
    let policy = ToolPolicy::from_toml_str("one_shot", &text).unwrap();
    let mut options = RunOptions::default()
        .stdio(Stdio::Capture)
        .helper(CLI)
        .one_shot();
    options.profile = Some(Profile::Hardened);
    let argv = [OsString::from(PYTHON), probe.clone().into_os_string()];
    let out = run(&policy, &argv, &options).unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (zygote, _) = parse(&text);
    let zygote_cmdline = cmdline(zygote).expect("the zygote lives while this process does");
    assert!(
        zygote_cmdline
            .windows(sandbox::trampoline::SUBCOMMAND.len())
            .any(|w| w == sandbox::trampoline::SUBCOMMAND.as_bytes()),
        "not the exec'd helper: {:?}",
        String::from_utf8_lossy(&zygote_cmdline)
    );
    sandbox::zygote::shut_down();
}
