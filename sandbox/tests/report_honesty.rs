//! The report is honest: for every attack of the escape suites, in both profiles, the attack
//! is either blocked, or the `--report` of that very run lists a rule about it as
//! `not_enforced` or `widened`.
//!
//! Table-driven: each row sets up host state, names the policy and the attacking command, and
//! says how success shows (the probe's line or a trace on the host) and which words a
//! disclosing rule carries. Each attack first runs unconfined, where it must succeed, so that
//! a row can fail. A run the sandbox refuses (exit 125) counts as blocked: nothing started.
//! Every failing row is listed before the test fails.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use sandbox::Profile;

#[path = "support/kernel.rs"]
mod kernel;

const CLI: &str = env!("CARGO_BIN_EXE_policy-sandbox");
const PROBE: &str = env!("CARGO_BIN_EXE_escape-probe");
const PYTHON: &str = "/usr/bin/python3";

/// Wraps an attack body: one line, `SUCCEEDED` or `BLOCKED errno`.
fn python(body: &str) -> Vec<String> {
    let mut code = String::from("import os, sys, socket, ctypes, resource\ntry:\n");
    for line in body.lines() {
        code.push_str("    ");
        code.push_str(line);
        code.push('\n');
    }
    code.push_str(
        "    print('SUCCEEDED', flush=True)\n\
         except Exception as e:\n    print('BLOCKED', getattr(e, 'errno', None) or type(e).__name__, flush=True)\n",
    );
    vec![PYTHON.into(), "-c".into(), code]
}

/// The scene of one row: a read root, a write root and a directory in no root.
struct Scene {
    dir: tempfile::TempDir,
}

impl Scene {
    fn new() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        for d in ["data", "work", "outside"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        Scene { dir }
    }

    fn path(&self, rel: &str) -> String {
        self.dir.path().join(rel).display().to_string()
    }

    fn policy(&self, extra: &str) -> String {
        format!(
            "net = \"deny\"\nexec = \"deny\"\n{extra}\n[fs]\nread = [\"{}/**\"]\nwrite = [\"{}/**\"]\n",
            self.path("data"),
            self.path("work")
        )
    }
}

/// Host state that lives as long as the row (listeners, processes, IPC segments).
enum Keep {
    Listener(#[allow(dead_code)] UnixListener),
    Tcp(#[allow(dead_code)] std::net::TcpListener),
    Process(Child),
    Shm(i32),
    /// A key in the test user's keyring (`@u`), invalidated when dropped.
    Key(i64),
}

impl Keep {
    /// Adds a `user` key described `description` to the user keyring; `None` where the kernel
    /// has no keyrings or refuses the test (a failure under `TOOLPOLICY_REQUIRE_KERNEL=1`).
    fn user_key(description: &str) -> Option<Keep> {
        let kind = c"user";
        let desc = std::ffi::CString::new(description).unwrap();
        // SAFETY: add_key with valid strings and a 1-byte payload.
        let serial = unsafe {
            libc::syscall(
                libc::SYS_add_key,
                kind.as_ptr(),
                desc.as_ptr(),
                c"x".as_ptr(),
                1usize,
                libc::KEY_SPEC_USER_KEYRING,
            )
        };
        if serial < 0 {
            kernel::missing(&format!(
                "keyrings (add_key to the user keyring failed: {})",
                std::io::Error::last_os_error()
            ));
            return None;
        }
        Some(Keep::Key(serial))
    }
}

impl Drop for Keep {
    fn drop(&mut self) {
        match self {
            Keep::Process(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            // SAFETY: removing the segment this test created.
            Keep::Shm(id) => unsafe {
                libc::shmctl(*id, libc::IPC_RMID, std::ptr::null_mut());
            },
            // SAFETY: invalidating the key this test added.
            Keep::Key(serial) => unsafe {
                libc::syscall(libc::SYS_keyctl, libc::KEYCTL_INVALIDATE, *serial);
            },
            _ => {}
        }
    }
}

type Check = Box<dyn Fn(&Output) -> bool>;

/// One attack, ready to run.
struct Attack {
    policy: String,
    argv: Vec<String>,
    /// Resets host state before each run (the unconfined control leaves traces).
    reset: Box<dyn Fn()>,
    /// Whether the attack had its effect.
    succeeded: Check,
    _keep: Vec<Keep>,
}

fn printed_success() -> Check {
    Box::new(|out: &Output| String::from_utf8_lossy(&out.stdout).contains("SUCCEEDED"))
}

struct Row {
    name: &'static str,
    /// Words of which one appears in a disclosing rule (its name, `to` or `reason`).
    disclosed_by: &'static [&'static str],
    /// Work on other branches that closes or discloses it, for the merger.
    closed_elsewhere: Option<&'static str>,
    /// Builds the attack; `None` when it does not apply to the profile here (printed).
    attack: fn(&Scene, Profile) -> Option<Attack>,
}

/// Under `policy`, the tool finds a port the test listens on in `/proc/net/tcp`.
fn host_port_listed(policy: String) -> Attack {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = hex_port(listener.local_addr().unwrap().port());
    Attack {
        policy,
        argv: python(&format!(
            "assert any('{port} ' in l and ' 0A ' in l for l in open('/proc/net/tcp'))"
        )),
        reset: Box::new(|| {}),
        succeeded: printed_success(),
        _keep: vec![Keep::Tcp(listener)],
    }
}

fn hex_port(port: u16) -> String {
    format!(":{port:04X}")
}

fn rows() -> Vec<Row> {
    vec![
        Row {
            name: "setuid bit on a file the tool creates in a write root",
            disclosed_by: &["setuid"],
            closed_elsewhere: Some("issue 12 item 1 (setuid/setgid/file caps, seccomp.rs)"),
            attack: |s, _| {
                let file = s.path("work/suid");
                let check = file.clone();
                let reset = file.clone();
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!(
                        "open('{file}', 'w').write('x')\nos.chmod('{file}', 0o4755)"
                    )),
                    reset: Box::new(move || {
                        let _ = std::fs::remove_file(&reset);
                    }),
                    succeeded: Box::new(move |_| {
                        std::fs::metadata(&check)
                            .is_ok_and(|m| m.permissions().mode() & 0o6000 != 0)
                    }),
                    _keep: vec![],
                })
            },
        },
        Row {
            name: "connect to a host pathname unix socket in a read root",
            disclosed_by: &["unix socket", "pathname"],
            closed_elsewhere: None,
            attack: |s, _| {
                let sock = s.path("data/daemon.sock");
                let listener = UnixListener::bind(&sock).unwrap();
                listener.set_nonblocking(true).unwrap();
                let probe = listener.try_clone().unwrap();
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!("socket.socket(socket.AF_UNIX).connect('{sock}')")),
                    reset: Box::new(|| {}),
                    succeeded: Box::new(move |_| probe.accept().is_ok()),
                    _keep: vec![Keep::Listener(listener)],
                })
            },
        },
        Row {
            name: "datagram to a host unix socket in a write root",
            disclosed_by: &["unix socket", "pathname"],
            closed_elsewhere: None,
            attack: |s, _| {
                let sock = s.path("work/log.sock");
                let bait = std::os::unix::net::UnixDatagram::bind(&sock).unwrap();
                bait.set_nonblocking(true).unwrap();
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!(
                        "socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', '{sock}')"
                    )),
                    reset: Box::new(|| {}),
                    succeeded: Box::new(move |_| bait.recv(&mut [0u8; 8]).is_ok()),
                    _keep: vec![],
                })
            },
        },
        Row {
            name: "execute a memfd copy of a binary under exec = [echo]",
            disclosed_by: &["memfd"],
            closed_elsewhere: Some("issue 12 item 4 (memfd exec, seccomp.rs)"),
            attack: |s, _| {
                Some(Attack {
                    policy: s.policy("").replace(
                        "exec = \"deny\"",
                        &format!("exec = {{ allow = [\"echo\", \"{PROBE}\"] }}"),
                    ),
                    argv: vec![
                        PROBE.into(),
                        "exec-memfd".into(),
                        "0".into(),
                        "/usr/bin/true".into(),
                    ],
                    reset: Box::new(|| {}),
                    succeeded: printed_success(),
                    _keep: vec![],
                })
            },
        },
        Row {
            name: "read a host process's argv through /proc",
            disclosed_by: &["cmdline"],
            closed_elsewhere: None,
            attack: |s, _| {
                let marker = format!("toolpolicy-honesty-{}", std::process::id());
                let host = Command::new(PYTHON)
                    .args(["-c", "import time; time.sleep(60)", &marker])
                    .spawn()
                    .unwrap();
                let pid = host.id();
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!(
                        "assert b'{marker}' in open('/proc/{pid}/cmdline', 'rb').read()"
                    )),
                    reset: Box::new(|| {}),
                    succeeded: printed_success(),
                    _keep: vec![Keep::Process(host)],
                })
            },
        },
        Row {
            name: "see a host listening port in /proc/net/tcp",
            disclosed_by: &["/proc/net"],
            closed_elsewhere: None,
            attack: |s, _| Some(host_port_listed(s.policy(""))),
        },
        Row {
            name: "see a host listening port in /proc/net/tcp under net = allow",
            disclosed_by: &["/proc/net"],
            closed_elsewhere: None,
            attack: |s, _| {
                Some(host_port_listed(
                    s.policy("").replace("net = \"deny\"", "net = \"allow\""),
                ))
            },
        },
        Row {
            name: "prlimit on a host process",
            disclosed_by: &["prlimit"],
            closed_elsewhere: Some("issue 12 item 11 (hardened prlimit, seccomp.rs)"),
            attack: |s, _| {
                let host = Command::new("/bin/sleep").arg("60").spawn().unwrap();
                let pid = host.id();
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!(
                        "resource.prlimit({pid}, resource.RLIMIT_NOFILE, (77, 1000))"
                    )),
                    reset: Box::new(move || {
                        let limit = libc::rlimit {
                            rlim_cur: 1000,
                            rlim_max: 1000,
                        };
                        // SAFETY: prlimit of our own child with a valid struct.
                        let rc = unsafe {
                            libc::prlimit(
                                pid as libc::pid_t,
                                libc::RLIMIT_NOFILE,
                                &limit,
                                std::ptr::null_mut(),
                            )
                        };
                        assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
                    }),
                    succeeded: Box::new(move |_| {
                        std::fs::read_to_string(format!("/proc/{pid}/limits")).is_ok_and(|l| {
                            l.lines()
                                .any(|l| l.starts_with("Max open files") && l.contains(" 77 "))
                        })
                    }),
                    _keep: vec![Keep::Process(host)],
                })
            },
        },
        Row {
            name: "attach a host SysV shared memory segment",
            disclosed_by: &["sysv", "ipc"],
            closed_elsewhere: Some("issue 12 item 12 (hardened SysV IPC, seccomp.rs)"),
            attack: |s, _| {
                let key = 0x7470_0000 | (std::process::id() as i32 & 0xffff);
                // SAFETY: creating a private test segment, removed when the row ends.
                let id = unsafe { libc::shmget(key, 4096, libc::IPC_CREAT | 0o600) };
                assert!(id >= 0, "shmget: {}", std::io::Error::last_os_error());
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!(
                        "libc = ctypes.CDLL(None, use_errno=True)\n\
                         if libc.shmget({key}, 0, 0) < 0: raise OSError(ctypes.get_errno(), 'shmget')"
                    )),
                    reset: Box::new(|| {}),
                    succeeded: printed_success(),
                    _keep: vec![Keep::Shm(id)],
                })
            },
        },
        Row {
            name: "chmod a file outside the roots",
            disclosed_by: &["chmod"],
            closed_elsewhere: None,
            attack: |s, _| {
                let file = s.path("outside/file");
                let reset = file.clone();
                let check = file.clone();
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!("os.chmod('{file}', 0o600)")),
                    reset: Box::new(move || {
                        std::fs::write(&reset, "x").unwrap();
                        std::fs::set_permissions(&reset, std::fs::Permissions::from_mode(0o644))
                            .unwrap();
                    }),
                    succeeded: Box::new(move |_| {
                        std::fs::metadata(&check)
                            .is_ok_and(|m| m.permissions().mode() & 0o777 == 0o600)
                    }),
                    _keep: vec![],
                })
            },
        },
        Row {
            name: "hold memory beyond memory_bytes in the private tmpfs",
            disclosed_by: &["tmpfs"],
            closed_elsewhere: Some("issue 12 item 3 (sized tmpfs, memory cgroup, mounts.rs)"),
            attack: |s, profile| {
                if profile == Profile::Hardened {
                    // The hardened scratch directory lives where the host's temp dir is.
                    let fs = statfs_type(&std::env::temp_dir());
                    if fs != Some(TMPFS_MAGIC) {
                        eprintln!("  (hardened: the scratch directory is on disk, not memory: not applicable)");
                        return None;
                    }
                }
                Some(Attack {
                    policy: s.policy("[limits]\nmemory_bytes = 67108864\n"),
                    argv: python(
                        "d = os.environ.get('TMPDIR', '/tmp')\n\
                         f = open(os.path.join(d, 'fill'), 'wb')\n\
                         for _ in range(96): f.write(b'x' * 1048576)\n\
                         f.close()",
                    ),
                    reset: Box::new(|| {}),
                    succeeded: printed_success(),
                    _keep: vec![],
                })
            },
        },
        Row {
            name: "TCP to a host loopback listener",
            disclosed_by: &["net "],
            closed_elsewhere: None,
            attack: |s, _| {
                let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let port = listener.local_addr().unwrap().port();
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!(
                        "socket.create_connection(('127.0.0.1', {port}), timeout=2)"
                    )),
                    reset: Box::new(|| {}),
                    succeeded: printed_success(),
                    _keep: vec![Keep::Tcp(listener)],
                })
            },
        },
        Row {
            name: "write a file outside the roots",
            disclosed_by: &["fs.write"],
            closed_elsewhere: None,
            attack: |s, _| {
                let file = s.path("outside/new");
                let reset = file.clone();
                let check = file.clone();
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!("open('{file}', 'w').write('x')")),
                    reset: Box::new(move || {
                        let _ = std::fs::remove_file(&reset);
                    }),
                    succeeded: Box::new(move |_| Path::new(&check).exists()),
                    _keep: vec![],
                })
            },
        },
        Row {
            name: "list a key of the runner's user in /proc/keys",
            disclosed_by: &["/proc/keys"],
            closed_elsewhere: None,
            attack: |s, _| {
                let description = format!("toolpolicy-honesty-{}", std::process::id());
                let key = Keep::user_key(&description)?;
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!(
                        "assert '{description}' in open('/proc/keys').read()"
                    )),
                    reset: Box::new(|| {}),
                    succeeded: printed_success(),
                    _keep: vec![key],
                })
            },
        },
        Row {
            // The neighbour of the row above that the report says stays closed: the key's
            // contents, which seccomp keeps out of reach in both profiles.
            name: "read the contents of a key of the runner's user (keyctl read)",
            disclosed_by: &["keyctl read"],
            closed_elsewhere: None,
            attack: |s, _| {
                let description = format!("toolpolicy-honesty-read-{}", std::process::id());
                let key = Keep::user_key(&description)?;
                let Keep::Key(serial) = key else {
                    unreachable!("user_key keeps a key")
                };
                // Readable by its owner's uid, not only by a process that possesses it: the
                // tool, whose uid is the runner's, then needs nothing but the call.
                // SAFETY: keyctl on the key this row added.
                let perm = unsafe {
                    libc::syscall(libc::SYS_keyctl, libc::KEYCTL_SETPERM, serial, 0x3f3f_0000)
                };
                assert_eq!(perm, 0, "{}", std::io::Error::last_os_error());
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!(
                        "libc = ctypes.CDLL(None, use_errno=True)\n\
                         buf = ctypes.create_string_buffer(16)\n\
                         n = libc.syscall({}, {}, {serial}, buf, 16)\n\
                         if n < 0: raise OSError(ctypes.get_errno(), 'keyctl read')\n\
                         assert buf.raw[:n] == b'x'",
                        libc::SYS_keyctl,
                        libc::KEYCTL_READ
                    )),
                    reset: Box::new(|| {}),
                    succeeded: printed_success(),
                    _keep: vec![key],
                })
            },
        },
        Row {
            name: "read root-only kernel state in /proc (slabinfo, kpageflags, ...)",
            disclosed_by: &["slabinfo"],
            closed_elsewhere: None,
            attack: |s, _| {
                // Readable only where the runner is the host's root (or holds
                // CAP_DAC_OVERRIDE): elsewhere the unconfined control fails too.
                if std::fs::File::open("/proc/slabinfo").is_err() {
                    eprintln!("  skipped: this user cannot read /proc/slabinfo unconfined");
                    return None;
                }
                let files = ROOT_ONLY_PROC
                    .iter()
                    .map(|f| format!("'{f}'"))
                    .collect::<Vec<_>>()
                    .join(", ");
                Some(Attack {
                    policy: s.policy(""),
                    argv: python(&format!(
                        "def readable(f):\n\
                         \x20   try:\n\
                         \x20       return len(open(f, 'rb').read(8)) >= 0\n\
                         \x20   except OSError:\n\
                         \x20       return False\n\
                         assert any(readable(f) for f in [{files}])"
                    )),
                    reset: Box::new(|| {}),
                    succeeded: printed_success(),
                    _keep: vec![],
                })
            },
        },
    ]
}

/// Global `/proc` entries whose mode (0400 or 0600, the host root's) is their only check.
const ROOT_ONLY_PROC: &[&str] = &[
    "/proc/slabinfo",
    "/proc/pagetypeinfo",
    "/proc/vmallocinfo",
    "/proc/timer_list",
    "/proc/kpageflags",
    "/proc/kpagecount",
    "/proc/kpagecgroup",
    "/proc/sys/kernel/usermodehelper/bset",
    "/proc/sys/vm/mmap_rnd_bits",
];

const TMPFS_MAGIC: i64 = 0x0102_1994;

fn statfs_type(path: &Path) -> Option<i64> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statfs into a zeroed struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0).then_some(st.f_type)
}

fn unconfined(argv: &[String]) -> Output {
    Command::new(&argv[0]).args(&argv[1..]).output().unwrap()
}

fn confined(policy: &Path, profile: Profile, argv: &[String]) -> Output {
    let name = match profile {
        Profile::Strict => "strict",
        Profile::Hardened => "hardened",
    };
    Command::new(CLI)
        .args(["run", "--report", "--profile", name, "--policy"])
        .arg(policy)
        .arg("--")
        .args(argv)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// The rules of the report (the first stderr line) that admit something is open.
fn disclosures(out: &Output) -> Vec<String> {
    let err = String::from_utf8_lossy(&out.stderr);
    let Some(report) = err
        .lines()
        .next()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    else {
        return Vec::new();
    };
    report["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["status"] == "not_enforced" || r["status"] == "widened")
        .map(|r| {
            format!(
                "{} | {} | {}",
                r["rule"].as_str().unwrap_or_default(),
                r["to"].as_str().unwrap_or_default(),
                r["reason"].as_str().unwrap_or_default()
            )
            .to_lowercase()
        })
        .collect()
}

fn profiles() -> Vec<Profile> {
    let mut out = Vec::new();
    if !Path::new(PYTHON).exists() {
        kernel::missing("no /usr/bin/python3 for the attack probes");
        return out;
    }
    if kernel::landlock_abi() < 6 {
        kernel::missing("Landlock ABI 6 is needed by both profiles");
        return out;
    }
    out.push(Profile::Hardened);
    if kernel::user_namespaces() {
        out.push(Profile::Strict);
    } else {
        kernel::missing("user namespaces (the strict profile)");
    }
    out
}

#[test]
fn every_attack_is_blocked_or_disclosed() {
    let profiles = profiles();
    let mut failures: Vec<String> = Vec::new();
    for row in rows() {
        for &profile in &profiles {
            let scene = Scene::new();
            eprintln!("{} [{profile}]", row.name);
            let Some(attack) = (row.attack)(&scene, profile) else {
                continue;
            };
            let policy: PathBuf = scene.dir.path().join("policy.toml");
            std::fs::write(&policy, &attack.policy).unwrap();

            (attack.reset)();
            let control = unconfined(&attack.argv);
            assert!(
                (attack.succeeded)(&control),
                "{}: the attack must work unconfined, or this row cannot fail: {}{}",
                row.name,
                String::from_utf8_lossy(&control.stdout),
                String::from_utf8_lossy(&control.stderr)
            );

            (attack.reset)();
            let out = confined(&policy, profile, &attack.argv);
            let refused = out.status.code() == Some(125);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let attempted = stdout
                .lines()
                .any(|l| l.starts_with("SUCCEEDED") || l.starts_with("BLOCKED"));
            // A limit that kills the attacker (the memory cgroup's OOM kill) stopped it before it
            // could say so: blocked, provided the attack left no success behind.
            let killed = out.status.code() == Some(128 + libc::SIGKILL)
                || std::os::unix::process::ExitStatusExt::signal(&out.status)
                    == Some(libc::SIGKILL);
            if killed && !(attack.succeeded)(&out) {
                eprintln!("  blocked (killed by a limit)");
                continue;
            }
            if !refused && !attempted {
                failures.push(format!(
                    "{} [{profile}]: the probe did not get to the attack: {stdout}{}",
                    row.name,
                    String::from_utf8_lossy(&out.stderr)
                ));
                continue;
            }
            if refused || !(attack.succeeded)(&out) {
                eprintln!(
                    "  blocked{}: {}",
                    if refused { " (refused)" } else { "" },
                    String::from_utf8_lossy(&out.stdout).trim()
                );
                continue;
            }
            let open = disclosures(&out);
            let said = open.iter().find(|r| {
                row.disclosed_by
                    .iter()
                    .any(|w| r.contains(&w.to_lowercase()))
            });
            match said {
                Some(rule) => eprintln!("  succeeded, disclosed: {rule}"),
                None => failures.push(format!(
                    "{} [{profile}]: succeeded ({}) and no not_enforced/widened rule mentions {:?}{}",
                    row.name,
                    stdout.trim(),
                    row.disclosed_by,
                    row.closed_elsewhere
                        .map(|w| format!(" (closed by: {w})"))
                        .unwrap_or_default()
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "undisclosed escapes:\n  {}",
        failures.join("\n  ")
    );
}
