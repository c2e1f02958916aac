//! Escape suite: every escape a malicious tool might try, run against the real kernel.
//!
//! Each escape runs first on the bare host, where it must succeed (so the test can fail), then
//! under `policy-sandbox run` with a policy that forbids it, where it must be blocked; the host is
//! then checked for traces (files, connections, dead processes). Everything runs as the current
//! user (root on CI) and again as uid 65534 via `setpriv`. The strict profile must block every
//! escape; the hardened profile must block it or refuse the policy, never let it through.
//!
//! `policy-sandbox run` is its process's only run and keeps nothing, while an agent's runs take
//! what earlier runs gave back. So every escape is tried a third time, as the second run of a
//! long-lived runner (`escape-runner`): a strict run in a view namespace and network namespace
//! lent again, copied from a view template (root's, or for uid 65534 one held in a user
//! namespace of the runner's own), a hardened run in a reused scratch slot, from the exec'd
//! zygote. The test checks that the strict run's view came from a template.
//!
//! Missing kernel features print a reason and skip, unless `TOOLPOLICY_REQUIRE_KERNEL=1`.

mod common;

use std::cell::RefCell;
use std::fs;
use std::os::unix::fs::{chown, PermissionsExt};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::bait::{self, Hits, RunDir, Victim};
use common::traces::{absent, remove};
use common::{
    escape, escape_in, kernel, probe, users, Attempt, Mode, Profile, Scenario, User, SECRET_KEY,
};

/// Host check: `path` still holds `content`.
fn unchanged(path: &str, content: &str) -> impl Fn() -> Result<(), String> + 'static {
    let (path, content) = (path.to_string(), content.to_string());
    move || match fs::read_to_string(&path) {
        Ok(now) if now == content => Ok(()),
        Ok(now) => Err(format!("{path} was modified to {now:?}")),
        Err(e) => Err(format!("{path} is gone: {e}")),
    }
}

/// Restores `path` to `content` before each run.
fn restore(path: &str, content: &str) -> impl Fn() + 'static {
    let (path, content) = (path.to_string(), content.to_string());
    move || fs::write(&path, &content).unwrap()
}

#[test]
fn write_outside_the_roots() {
    escape("write to a directory in no root", |s| {
        let target = s.path("outside/new-file");
        Some(
            Attempt::new(&["write", &target], s.base_policy())
                .reset(remove(&target))
                .no_trace(absent(&target)),
        )
    });
    escape("write into the read-only root", |s| {
        let target = s.path("data/file");
        Some(
            Attempt::new(&["write", &target], s.base_policy())
                .reset(restore(&target, "read-only data\n"))
                .no_trace(unchanged(&target, "read-only data\n")),
        )
    });
}

#[test]
fn write_through_a_symlink_pointing_out() {
    escape("write through work/link -> outside/new-file", |s| {
        let (target, link) = (s.path("outside/new-file"), s.path("work/link"));
        Some(
            Attempt::new(&["symlink-write", &target, &link], s.base_policy())
                .reset(remove(&target))
                .no_trace(absent(&target)),
        )
    });
    escape(
        "write through work/link -> data/file (read-only root)",
        |s| {
            let (target, link) = (s.path("data/file"), s.path("work/link"));
            Some(
                Attempt::new(&["symlink-write", &target, &link], s.base_policy())
                    .reset(restore(&target, "read-only data\n"))
                    .no_trace(unchanged(&target, "read-only data\n")),
            )
        },
    );
}

#[test]
fn hard_link_from_outside_into_a_root() {
    for (what, src) in [
        ("hard link outside/file into work", "outside/file"),
        (
            "hard link data/file (read-only root) into work",
            "data/file",
        ),
        ("hard link home/.ssh/id_rsa into work", "home/.ssh/id_rsa"),
    ] {
        escape(what, |s| {
            let (src, dst) = (s.path(src), s.path("work/linked"));
            Some(
                Attempt::new(&["hardlink", &src, &dst], s.base_policy())
                    .reset(remove(&dst))
                    .no_trace(absent(&dst)),
            )
        });
    }
}

#[test]
fn read_ssh_secret_outside_the_read_roots() {
    escape("read ~/.ssh/id_rsa, read roots declared", |s| {
        let key = s.path("home/.ssh/id_rsa");
        Some(Attempt::new(&["read", &key, SECRET_KEY], s.base_policy()))
    });
    escape("read ~/.ssh/id_rsa, read roots unspecified", |s| {
        let key = s.path("home/.ssh/id_rsa");
        let policy = format!(
            "net = \"deny\"\nexec = \"deny\"\nenv = \"deny\"\n\n[fs]\nwrite = [\"{}/**\"]\n",
            s.path("work")
        );
        Some(Attempt::new(&["read", &key, SECRET_KEY], policy))
    });
}

/// An attempt whose host-side trace is a listener's hit count.
fn network_attempt(args: &[&str], policy: String, hits: Hits) -> Attempt {
    let baseline = Arc::new(AtomicUsize::new(0));
    let (record, check) = (baseline.clone(), baseline);
    let counted = hits.clone();
    Attempt::new(args, policy)
        .reset(move || {
            // Let the accept thread count a connection the previous run made.
            std::thread::sleep(std::time::Duration::from_millis(100));
            record.store(counted.count(), Ordering::SeqCst);
        })
        .no_trace(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            hits.unchanged_since(check.load(Ordering::SeqCst), "listener")
        })
}

#[test]
fn tcp_and_udp_to_host_loopback() {
    let mut families = vec![false];
    if kernel::ipv6_loopback() {
        families.push(true);
    } else {
        kernel::missing("IPv6 loopback (::1) is not available; testing IPv4 only");
    }
    for v6 in families {
        let ip = if v6 { "6" } else { "4" };
        escape(
            &format!("TCP over IPv{ip} to a host loopback listener"),
            |s| {
                let (port, hits) = bait::tcp_listener(v6);
                let action = format!("tcp{ip}");
                Some(network_attempt(
                    &[&action, &port.to_string()],
                    s.base_policy(),
                    hits,
                ))
            },
        );
        escape(
            &format!("UDP over IPv{ip} to a host loopback echo server"),
            |s| {
                let (port, hits) = bait::udp_echo(v6);
                let action = format!("udp{ip}");
                Some(network_attempt(
                    &[&action, &port.to_string()],
                    s.base_policy(),
                    hits,
                ))
            },
        );
    }
}

/// A listening abstract socket on the host, named for the scenario and `tag`.
fn abstract_socket_bait(s: &Scenario, tag: &str) -> (String, Hits) {
    let name = format!(
        "toolpolicy-escapes-{tag}-{}-{}",
        std::process::id(),
        s.root.file_name().unwrap().to_string_lossy()
    );
    let hits = bait::abstract_listener(&name);
    (name, hits)
}

/// A listening pathname socket in a new directory under `/run`, where the host's daemons keep
/// theirs; the directory lives in `dirs` until the test ends. `None` when `/run` is not
/// writable here (a failure under `TOOLPOLICY_REQUIRE_KERNEL=1`).
fn run_socket_bait(dirs: &RefCell<Vec<RunDir>>) -> Option<(String, Hits)> {
    let dir = match RunDir::create() {
        Ok(dir) => dir,
        Err(reason) => {
            kernel::missing(&format!("{reason} (run the suite as root)"));
            return None;
        }
    };
    let path = dir.0.join("daemon.sock");
    let hits = bait::path_listener(&path);
    dirs.borrow_mut().push(dir);
    Some((path.to_str().unwrap().to_string(), hits))
}

#[test]
fn host_unix_sockets() {
    escape("connect to a host abstract unix socket", |s| {
        let (name, hits) = abstract_socket_bait(s, "deny");
        Some(network_attempt(
            &["unix-abstract", &name],
            s.base_policy(),
            hits,
        ))
    });
    escape(
        "connect to a host pathname unix socket in a temp dir",
        |s| {
            let path = s.path("outside/sock");
            let hits = bait::path_listener(path.as_ref());
            Some(network_attempt(
                &["unix-path", &path],
                s.base_policy(),
                hits,
            ))
        },
    );
    let run_dirs: RefCell<Vec<RunDir>> = RefCell::new(vec![]);
    escape("connect to a host pathname unix socket under /run", |s| {
        let (path, hits) = run_socket_bait(&run_dirs)?;
        Some(network_attempt(
            &["unix-path", &path],
            s.base_policy(),
            hits,
        ))
    });
}

#[test]
fn host_unix_sockets_stay_out_of_reach_with_net_allow() {
    // net = "allow" grants the network, not the host's local daemons: abstract sockets are
    // scoped by Landlock and socket directories stay hidden by the mount namespace.
    let allow = |s: &Scenario| s.base_policy().replace("net = \"deny\"", "net = \"allow\"");
    escape_in(
        &[Profile::Strict],
        "abstract unix socket, net = allow",
        |s| {
            let (name, hits) = abstract_socket_bait(s, "allow");
            Some(network_attempt(&["unix-abstract", &name], allow(s), hits))
        },
    );
    let run_dirs: RefCell<Vec<RunDir>> = RefCell::new(vec![]);
    escape_in(
        &[Profile::Strict],
        "unix socket under /run, net = allow",
        |s| {
            let (path, hits) = run_socket_bait(&run_dirs)?;
            Some(network_attempt(&["unix-path", &path], allow(s), hits))
        },
    );
}

#[test]
fn read_etc_shadow_as_root() {
    escape("read /etc/shadow", |s| {
        if s.user != User::Root || !std::path::Path::new("/etc/shadow").exists() {
            eprintln!("skipped: only root can read /etc/shadow on the bare host");
            return None;
        }
        Some(Attempt::new(
            &["read", "/etc/shadow", "root:"],
            s.base_policy(),
        ))
    });
}

#[test]
fn ptrace_of_the_parent_and_of_a_host_process() {
    escape("PTRACE_ATTACH to the parent", |s| {
        Some(Attempt::new(&["ptrace", "parent"], s.base_policy()).under_shell())
    });
    escape("PTRACE_ATTACH to a host process of the same user", |s| {
        let victim = Rc::new(RefCell::new(Victim::start(s.user, "not-the-point")));
        let pid = victim.borrow().pid().to_string();
        Some(
            Attempt::new(&["ptrace", &pid], s.base_policy()).no_trace(move || {
                match victim.borrow_mut().alive() {
                    true => Ok(()),
                    false => Err("the host process died".into()),
                }
            }),
        )
    });
}

#[test]
fn signals_to_host_processes() {
    for signal in ["0", "15"] {
        escape(&format!("kill(host pid, {signal})"), |s| {
            let user = s.user;
            let victim = Rc::new(RefCell::new(Victim::start(user, "not-the-point")));
            let (respawn, current, check) = (victim.clone(), victim.clone(), victim);
            Some(
                Attempt::new(&[], s.base_policy())
                    .reset(move || {
                        // The bare SIGTERM kills the victim; the sandboxed run gets a fresh one.
                        // kill() returns before the target is gone, so give it time to die.
                        std::thread::sleep(std::time::Duration::from_millis(300));
                        let dead = !respawn.borrow_mut().alive();
                        if dead {
                            *respawn.borrow_mut() = Victim::start(user, "not-the-point");
                        }
                    })
                    .args(move || {
                        let pid = current.borrow().pid();
                        vec!["kill".into(), pid.to_string(), signal.into()]
                    })
                    .no_trace(move || match check.borrow_mut().alive() {
                        true => Ok(()),
                        false => Err("the host process was killed".into()),
                    }),
            )
        });
    }
}

#[test]
fn read_another_process_environ() {
    escape("read /proc/<host pid>/environ holding a secret", |s| {
        let secret = format!("s3cr3t-{}", std::process::id());
        let victim = Victim::start(s.user, &secret);
        let pid = victim.pid().to_string();
        Some(
            Attempt::new(&["environ", &pid, &secret], s.base_policy()).no_trace(move || {
                let _keep_alive = &victim;
                Ok(())
            }),
        )
    });
}

#[test]
fn new_user_namespaces_and_mounts() {
    for (what, action) in [
        ("unshare(CLONE_NEWUSER)", "unshare-user"),
        ("raw clone(CLONE_NEWUSER)", "clone-user"),
        ("raw clone3(CLONE_NEWUSER)", "clone3-user"),
    ] {
        escape(what, |s| Some(Attempt::new(&[action], s.base_policy())));
    }
    escape("unshare(CLONE_NEWUSER|CLONE_NEWNS) then mount tmpfs", |s| {
        let dir = s.path("work");
        Some(Attempt::new(&["unshare-user-mount", &dir], s.base_policy()))
    });
    escape("mount tmpfs", |s| {
        if s.user != User::Root {
            eprintln!("skipped for uid 65534: a bare mount needs root, so it cannot succeed");
            return None;
        }
        let dir = s.path("work/mnt");
        fs::create_dir_all(&dir).unwrap();
        Some(Attempt::new(&["mount-tmpfs", &dir], s.base_policy()))
    });
}

#[test]
fn io_uring_is_unavailable() {
    if !fs::read_to_string("/proc/sys/kernel/io_uring_disabled").is_ok_and(|v| v.trim() == "0") {
        eprintln!("skipped: io_uring is disabled on this host, so the bare run cannot succeed");
        return;
    }
    escape("io_uring_setup", |s| {
        Some(Attempt::new(&["io-uring"], s.base_policy()))
    });
}

#[test]
fn x32_syscall_numbers() {
    let bare = probe(User::Root, Mode::Bare, &["unshare-user-x32"]);
    if bare.stdout.contains("ENOSYS") {
        // Without an x32 ABI there is no bypass to show, but the filter must still stop x32
        // numbers before the kernel sees them: bare they fail with ENOSYS, confined the
        // process is killed (SIGSYS) without reporting.
        for user in users() {
            for profile in Profile::available() {
                let scenario = Scenario::new(user);
                let policy = scenario.policy("policy", &scenario.base_policy());
                let report = probe(
                    user,
                    Mode::Sandboxed(&policy, profile),
                    &["unshare-user-x32"],
                );
                assert_eq!(
                    report.code,
                    Some(128 + libc::SIGSYS),
                    "x32 number [as {}, {}]: not killed by the filter: {}\n{}",
                    user.name(),
                    profile.name(),
                    report.stdout,
                    report.stderr
                );
                assert!(report.result_line().is_none(), "{}", report.stdout);
            }
        }
        return;
    }
    escape("unshare(CLONE_NEWUSER) via the x32 syscall number", |s| {
        Some(Attempt::new(&["unshare-user-x32"], s.base_policy()))
    });
}

/// The dynamic loader of x86_64 glibc, through which `exec = deny` is commonly bypassed.
const LOADER: &str = "/lib64/ld-linux-x86-64.so.2";

/// Places a copy of `/bin/sh` in the write root, as a tool could have done in an earlier step.
fn copied_shell(s: &Scenario) -> String {
    let copy = s.path("work/sh");
    fs::copy("/bin/sh", &copy).unwrap();
    fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
    chown(&copy, Some(s.user.uid()), Some(s.user.uid())).unwrap();
    copy
}

#[test]
fn exec_deny_holds_against_shells_loader_and_copies() {
    if !std::path::Path::new(LOADER).exists() {
        kernel::missing("no x86_64 glibc loader at /lib64; the loader trick cannot be tried");
        return;
    }
    let sh_exit = ["-c", "exit 42"];
    escape("exec /bin/sh under exec = deny", |s| {
        Some(Attempt::new(
            &["exec", "42", "/bin/sh", sh_exit[0], sh_exit[1]],
            s.base_policy(),
        ))
    });
    escape("exec ld.so /bin/sh under exec = deny", |s| {
        Some(Attempt::new(
            &["exec", "42", LOADER, "/bin/sh", sh_exit[0], sh_exit[1]],
            s.base_policy(),
        ))
    });
    escape("exec a binary copied into the write root", |s| {
        let copy = copied_shell(s);
        Some(Attempt::new(
            &["exec", "42", &copy, sh_exit[0], sh_exit[1]],
            s.base_policy(),
        ))
    });
    escape("exec ld.so <binary copied into the write root>", |s| {
        let copy = copied_shell(s);
        Some(Attempt::new(
            &["exec", "42", LOADER, &copy, sh_exit[0], sh_exit[1]],
            s.base_policy(),
        ))
    });
    // The hardened command's own execve passes its filter by the tail's secret in the three
    // registers execve does not read: no guess passes, zeros (an unsealed filter's) least
    // of all. The target is the probe itself, which Landlock lets the command execute (only
    // the filter stands in the way); without arguments it prints its usage and exits 2.
    let probe = common::binaries().probe.display().to_string();
    for registers in [
        ["0", "0", "0"],
        ["18446744073709551615", "1", "0"],
        ["1", "2", "3"],
    ] {
        escape(
            &format!("re-exec the command with r10, r8, r9 = {registers:?} under exec = deny"),
            |s| {
                let mut argv = vec!["exec-regs", "2"];
                argv.extend(registers);
                argv.push(probe.as_str());
                Some(Attempt::new(&argv, s.base_policy()))
            },
        );
    }
    escape("execveat of /bin/sh copied into a memfd", |s| {
        Some(Attempt::new(
            &["exec-memfd", "42", "/bin/sh", sh_exit[0], sh_exit[1]],
            s.base_policy(),
        ))
    });
    escape(
        "copy /bin/sh into the write root inside the sandbox, then exec it",
        |s| {
            let copy = s.path("work/sh-copied-inside");
            Some(Attempt::new(
                &[
                    "copy-exec",
                    "/bin/sh",
                    &copy,
                    "42",
                    &copy,
                    sh_exit[0],
                    sh_exit[1],
                ],
                s.base_policy(),
            ))
        },
    );
}

#[test]
fn fork_bomb_is_bounded() {
    escape("fork 200 processes under max_processes = 16", |s| {
        let policy = format!("{}max_processes = 16\n", s.base_policy());
        Some(Attempt::new(&["fork-bomb", "200"], policy))
    });
}

#[test]
fn memory_hog_is_bounded() {
    escape("touch 1 GiB under memory_bytes = 256 MiB", |s| {
        let policy = format!("{}memory_bytes = {}\n", s.base_policy(), 256u64 << 20);
        Some(Attempt::new(&["memory-hog", "1024"], policy))
    });
}

#[test]
fn no_new_privs_and_no_capabilities() {
    let profiles = Profile::available();
    for user in users() {
        let bare = probe(user, Mode::Bare, &["status"]);
        let nnp = bare.status_field("NoNewPrivs");
        assert_eq!(
            nnp.as_deref(),
            Some("0"),
            "bare run must show NoNewPrivs 0: {bare:?}"
        );
        if user == User::Root {
            let cap = bare.status_field("CapEff").unwrap_or_default();
            assert_ne!(
                cap, "0000000000000000",
                "bare root must have capabilities: {bare:?}"
            );
        }
        for profile in profiles.iter().copied() {
            let s = Scenario::new(user);
            let policy = s.policy("policy", &s.base_policy());
            for (mode, lent) in [
                (Mode::Sandboxed(&policy, profile), ""),
                (Mode::Lent(&policy, profile), ", lent"),
            ] {
                let report = probe(user, mode, &["status"]);
                let label = format!("status [as {}, {}{lent}]", user.name(), profile.name());
                if profile == Profile::Hardened && report.refused() {
                    eprintln!("{label}: refused: {}", report.stderr.trim());
                    continue;
                }
                assert!(!report.refused(), "{label}: refused\n{report:?}");
                if !lent.is_empty() {
                    report.assert_lent(&label, profile);
                }
                assert_eq!(
                    report.status_field("NoNewPrivs").as_deref(),
                    Some("1"),
                    "{label}: NoNewPrivs must be 1\n{report:?}"
                );
                assert_eq!(
                    report.status_field("CapEff").as_deref(),
                    Some("0000000000000000"),
                    "{label}: CapEff must be 0\n{report:?}"
                );
                eprintln!("{label}: {}", report.result_line().unwrap_or_default());
            }
        }
    }
}

#[test]
fn refused_policies_never_start_the_command() {
    let (port, hits) = bait::tcp_listener(false);
    for user in users() {
        let s = Scenario::new(user);
        let marker = s.path("work/started");
        let cases = [
            (
                "net host allow-list under --profile hardened (needs a network namespace)",
                Profile::Hardened,
                format!(
                    "net = {{ hosts = [\"127.0.0.1:{port}\"] }}\n\n[fs]\nwrite = [\"{}/**\"]\n",
                    s.path("work")
                ),
            ),
            (
                "exec allow-list under --profile hardened (the loader trick cannot be stopped)",
                Profile::Hardened,
                format!(
                    "exec = {{ allow = [\"/usr/bin/true\"] }}\n\n[fs]\nwrite = [\"{}/**\"]\n",
                    s.path("work")
                ),
            ),
        ];
        for (what, profile, policy) in cases {
            let policy = s.policy("refused", &policy);
            for (mode, lent) in [
                (Mode::Sandboxed(&policy, profile), ""),
                (Mode::Lent(&policy, profile), ", lent"),
            ] {
                let label = format!("refused: {what} [as {}{lent}]", user.name());
                let report = probe(user, mode, &["write", &marker]);
                assert!(
                    report.refused(),
                    "{label}: expected exit 125 and `refused:`\n{report:?}"
                );
                assert!(
                    !report.started(),
                    "{label}: the command started anyway\n{report:?}"
                );
                assert!(
                    absent(&marker)().is_ok(),
                    "{label}: the command ran: {marker} exists"
                );
                let reason = report
                    .stderr
                    .lines()
                    .find(|l| l.starts_with("refused:"))
                    .unwrap();
                eprintln!("{label}: {reason}");
            }
        }
    }
    assert_eq!(
        hits.count(),
        0,
        "a refused command reached the host listener"
    );
}

#[test]
fn the_default_profile_is_strict() {
    if !Profile::available().contains(&Profile::Strict) {
        return;
    }
    for user in users() {
        let s = Scenario::new(user);
        let policy = s.policy("policy", &s.base_policy());
        let strict = probe(user, Mode::Sandboxed(&policy, Profile::Strict), &["status"]);
        let default = probe(user, Mode::SandboxedByDefault(&policy), &["status"]);
        let label = format!("no --profile [as {}]", user.name());
        assert!(strict.status_field("Uid").is_some(), "{label}: {strict:?}");
        // The strict profile runs as its own inner uid with an empty bounding set; the same
        // identity without --profile shows nothing ran with less.
        for key in ["Uid", "NoNewPrivs", "CapEff", "CapBnd"] {
            assert_eq!(
                default.status_field(key),
                strict.status_field(key),
                "{label}: {key} differs from --profile strict\n{default:?}"
            );
        }
        let secret = probe(
            user,
            Mode::SandboxedByDefault(&policy),
            &["read", &s.path("home/.ssh/id_rsa"), SECRET_KEY],
        );
        secret.assert_blocked(&label);
        eprintln!("{label}: {}", default.result_line().unwrap_or_default());
    }
}

/// The hardened zygote runs under the commands' tail, whose `setpgid` needs the zygote's
/// secret (its G makes the command's group with it): no guess lets a descendant of the command
/// leave the group, which is how a run's end finds everything the command started; zeros (an
/// unsealed tail's) least of all, under exec = deny and exec = allow (a tail without exec
/// rules, which the zygote seals all the same).
#[test]
fn no_guessed_secret_lets_a_descendant_leave_the_hardened_commands_group() {
    for registers in [
        ["0", "0", "0"],
        ["18446744073709551615", "1", "0"],
        ["1", "2", "3"],
    ] {
        for exec in ["deny", "allow"] {
            escape_in(
                &[Profile::Hardened],
                &format!(
                    "leave the command's process group, setpgid with r10, r8, r9 = \
                     {registers:?} under exec = {exec}"
                ),
                |s| {
                    let mut argv = vec!["setpgid-regs"];
                    argv.extend(registers);
                    let policy = s
                        .base_policy()
                        .replace("exec = \"deny\"", &format!("exec = \"{exec}\""));
                    Some(Attempt::new(&argv, policy))
                },
            );
        }
    }
}

#[test]
fn exec_allow_list_admits_exactly_the_listed_programs() {
    // Under an exec list the command is checked like any program: the probe is listed too.
    let allow_true = |s: &Scenario| {
        s.base_policy().replace(
            "exec = \"deny\"",
            &format!(
                "exec = {{ allow = [\"/usr/bin/true\", \"{}\"] }}",
                common::binaries().probe.display()
            ),
        )
    };
    if !Profile::available().contains(&Profile::Strict) {
        return;
    }
    for user in users() {
        let s = Scenario::new(user);
        let policy = s.policy("allow-true", &allow_true(&s));
        let label = format!(
            "exec of the listed /usr/bin/true [as {}, strict]",
            user.name()
        );
        let report = probe(
            user,
            Mode::Sandboxed(&policy, Profile::Strict),
            &["exec", "0", "/usr/bin/true"],
        );
        let ran = report
            .result_line()
            .is_some_and(|l| l.starts_with("SUCCEEDED "));
        assert!(ran, "{label}: a listed program must run\n{report:?}");
        eprintln!("{label}: {}", report.result_line().unwrap_or_default());
    }
    escape("exec /bin/sh under exec = [/usr/bin/true]", |s| {
        Some(Attempt::new(
            &["exec", "42", "/bin/sh", "-c", "exit 42"],
            allow_true(s),
        ))
    });
    escape("exec ld.so /bin/sh under exec = [/usr/bin/true]", |s| {
        Some(Attempt::new(
            &["exec", "42", LOADER, "/bin/sh", "-c", "exit 42"],
            allow_true(s),
        ))
    });
}

#[test]
fn no_process_outlives_the_run() {
    const DELAY_MS: &str = "1500";
    let profiles = Profile::available();
    let mut checks = vec![];
    let mut scenarios = vec![];
    // A detached grandchild (double fork, `setsid`), and a sibling (`clone(CLONE_PARENT)`),
    // which is the child of whatever started the command, not of the command.
    for user in users() {
        let s = Scenario::new(user);
        for way in ["orphan", "sibling"] {
            let bare_mark = s.path(&format!("work/bare-{way}"));
            probe(user, Mode::Bare, &[way, &bare_mark, DELAY_MS])
                .assert_succeeded("a process left behind");
            checks.push((format!("{way} [as {}, bare]", user.name()), bare_mark, true));
            for profile in profiles.iter().copied() {
                let policy = s.policy(profile.name(), &s.base_policy());
                for (mode, lent) in [
                    (Mode::Sandboxed(&policy, profile), ""),
                    (Mode::Lent(&policy, profile), "-lent"),
                ] {
                    let label = format!("{way} [as {}, {}{lent}]", user.name(), profile.name());
                    let mark = s.path(&format!("work/{way}-{}{lent}", profile.name()));
                    let report = probe(user, mode, &[way, &mark, DELAY_MS]);
                    assert!(
                        report.started() && !report.refused(),
                        "{label}: the probe did not run\n{report:?}"
                    );
                    if !lent.is_empty() {
                        report.assert_lent(&label, profile);
                    }
                    checks.push((label, mark, false));
                }
            }
        }
        scenarios.push(s);
    }
    std::thread::sleep(std::time::Duration::from_millis(3000));
    for (label, mark, expect) in checks {
        let exists = std::path::Path::new(&mark).exists();
        if expect {
            assert!(
                exists,
                "{label}: the detached grandchild must survive without the sandbox, or this \
                 test proves nothing"
            );
        } else {
            assert!(
                !exists,
                "{label}: ESCAPE — a detached grandchild outlived the sandboxed run and wrote {mark}"
            );
        }
        let fate = if exists {
            "survived"
        } else {
            "died with the run"
        };
        eprintln!("{label}: grandchild {fate}");
    }
}

#[test]
fn tiocsti_keystroke_injection_into_the_callers_terminal() {
    const TEXT: &str = "echo toolpolicy-injected";
    for user in users() {
        let (bare, typed) = common::pty::probe_on_pty(user, Mode::Bare, &["tiocsti", TEXT]);
        let label = format!("TIOCSTI into the caller's terminal [as {}]", user.name());
        if bare.stdout.contains("BLOCKED") {
            // dev.tty.legacy_tiocsti = 0 turns TIOCSTI off for processes without CAP_SYS_ADMIN.
            eprintln!(
                "skipped: {label}: the host forbids TIOCSTI already: {}",
                bare.stdout.trim()
            );
            continue;
        }
        bare.assert_succeeded(&label);
        assert!(
            typed.contains(TEXT),
            "{label}: the bare injection must reach the terminal input, got {typed:?}"
        );
        for profile in Profile::available() {
            let s = Scenario::new(user);
            let policy = s.policy("policy", &s.base_policy());
            let label = format!("{label} [{}]", profile.name());
            let (report, typed) = common::pty::probe_on_pty(
                user,
                Mode::Sandboxed(&policy, profile),
                &["tiocsti", TEXT],
            );
            report.assert_blocked_or_refused(&label);
            assert!(
                !typed.contains(TEXT),
                "{label}: ESCAPE — injected input reached the caller's terminal: {typed:?}"
            );
            eprintln!("{label}: {}", report.result_line().unwrap_or("(killed)"));
        }
    }
}

#[test]
fn host_namespaces_and_file_handles_as_root() {
    escape("setns into the mount namespace of a host process", |s| {
        if s.user != User::Root {
            eprintln!("skipped for uid 65534: setns needs CAP_SYS_ADMIN, so the bare run fails");
            return None;
        }
        let victim = Victim::start(s.user, "not-the-point");
        let pid = victim.pid().to_string();
        Some(
            Attempt::new(&["setns-mnt", &pid], s.base_policy()).no_trace(move || {
                let _keep_alive = &victim;
                Ok(())
            }),
        )
    });
    // "Shocker": a file handle names a file without any path, so path rules and the mount view
    // do not apply; only capabilities (CAP_DAC_READ_SEARCH) and seccomp stand in the way.
    escape(
        "open_by_handle_at of ~/.ssh/id_rsa through the write root's mount",
        |s| {
            if s.user != User::Root {
                eprintln!("skipped for uid 65534: open_by_handle_at needs CAP_DAC_READ_SEARCH");
                return None;
            }
            let key = s.path("home/.ssh/id_rsa");
            let handle = probe(User::Root, Mode::Bare, &["handle-of", &key]);
            let Some(line) = handle
                .stdout
                .lines()
                .find_map(|l| l.strip_prefix("HANDLE "))
            else {
                eprintln!(
                    "skipped: this filesystem gives no file handles: {}",
                    handle.stdout.trim()
                );
                return None;
            };
            let (kind, hex) = line.split_once(' ').expect("HANDLE <type> <hex>");
            let work = s.path("work");
            Some(Attempt::new(
                &["open-by-handle", &work, kind, hex, SECRET_KEY],
                s.base_policy(),
            ))
        },
    );
}

#[test]
fn environment_secrets_do_not_cross() {
    let secret = format!("env-secret-{}", std::process::id());
    let run = |user: User, mode: Mode<'_>| {
        let argv = common::probe_argv(user, mode, &["read", "/proc/self/environ", &secret]);
        let mut command = std::process::Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .env(bait::SECRET_VAR, &secret)
            .stdin(std::process::Stdio::null());
        common::wait_with_timeout(command, std::time::Duration::from_secs(90))
    };
    for user in users() {
        run(user, Mode::Bare).assert_succeeded("inherited environment");
        for profile in Profile::available() {
            let s = Scenario::new(user);
            for (what, env) in [
                ("env = deny", "env = \"deny\"".to_string()),
                (
                    "env = [LANG, LC_*]",
                    "env = { allow = [\"LANG\", \"LC_*\"] }".to_string(),
                ),
            ] {
                let policy = s.policy("env", &s.base_policy().replace("env = \"deny\"", &env));
                for (mode, lent) in [
                    (Mode::Sandboxed(&policy, profile), ""),
                    (Mode::Lent(&policy, profile), ", lent"),
                ] {
                    let label = format!("{what} [as {}, {}{lent}]", user.name(), profile.name());
                    let report = run(user, mode);
                    report.assert_blocked(&label);
                    if !lent.is_empty() {
                        report.assert_lent(&label, profile);
                    }
                    eprintln!("{label}: {}", report.result_line().unwrap_or_default());
                }
            }
        }
    }
}
