//! Resources the sandbox gives and bounds: the memory limit of the whole tree (tmpfs and shared
//! memory included) and its per-run cgroups, declared roots that hold `/tmp`, and limits too
//! small for any program to start under.
//!
//! Every run goes through `policy-sandbox run` as root and, where `setpriv` exists, as uid
//! 65534 (which gets no memory cgroup: the report must then say what the limit misses).

mod common;

use std::path::PathBuf;

use common::{kernel, probe, sandboxed, users, Mode, Profile, Report, Scenario, User};

const MIB: u64 = 1 << 20;

/// The report `--report` printed on stderr.
fn report_of(out: &Report) -> serde_json::Value {
    out.stderr
        .lines()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .unwrap_or_else(|| panic!("no report on stderr of `{}`:\n{}", out.command, out.stderr))
}

/// The report line of `rule`.
fn rule<'a>(report: &'a serde_json::Value, rule: &str) -> &'a serde_json::Value {
    report["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == rule)
        .unwrap_or_else(|| panic!("no rule `{rule}` in {report:#}"))
}

fn probe_path() -> String {
    common::binaries().probe.display().to_string()
}

#[test]
fn memory_limit_holds_the_whole_tree_tmpfs_and_shared_memory_included() {
    for user in users() {
        // Unconfined, a memfd holds 512 MiB (tmpfs pages are the same kind of memory): the
        // sandboxed runs below prove something.
        probe(user, Mode::Bare, &["memfd-fill", "512"]).assert_succeeded("memfd 512 MiB");

        for profile in Profile::available() {
            let s = Scenario::new(user);
            let policy = s.policy(
                "mem",
                &format!("{}memory_bytes = {}\n", s.base_policy(), 64 * MIB),
            );
            let label = |what: &str| format!("{what} [as {}, {}]", user.name(), profile.name());
            let mut targets = vec!["memfd".to_string()];
            if profile == Profile::Strict {
                // The private /tmp and /dev/shm are tmpfs: pages, not address space.
                targets.push("/tmp/fill".into());
                targets.push("/dev/shm/fill".into());
            }
            for target in targets {
                let argv: Vec<String> = if target == "memfd" {
                    vec![probe_path(), "memfd-fill".into(), "512".into()]
                } else {
                    vec![probe_path(), "fill".into(), target.clone(), "512".into()]
                };
                let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                let out = sandboxed(user, &policy, profile, &argv);
                let report = report_of(&out);
                let row = rule(&report, &format!("limits.memory_bytes {}", 64 * MIB));
                let held = out
                    .result_line()
                    .is_some_and(|l| l.starts_with("SUCCEEDED"));
                if row["status"] == "exact" {
                    // The memory cgroup holds the tree: no way around the limit.
                    assert!(row["by"].to_string().contains("memory cgroup"), "{row}");
                    out.assert_blocked(&label(&format!("512 MiB into {target}")));
                } else {
                    // Without a cgroup the report must name what the limit misses, and the
                    // sandbox's own tmpfs is still sized.
                    assert_eq!(row["status"], "widened", "{row}");
                    let to = row["to"].as_str().unwrap();
                    assert!(to.contains("memfd"), "{to}");
                    if target == "memfd" {
                        eprintln!(
                            "{}: {} (disclosed: {to})",
                            label("memfd without a memory cgroup"),
                            out.result_line().unwrap_or("killed")
                        );
                    } else {
                        assert!(!held, "{}: {}", label(&target), out.stdout);
                        out.assert_blocked(&label(&format!("512 MiB into {target}")));
                    }
                }
                eprintln!(
                    "{}: {} ({})",
                    label(&target),
                    out.result_line().unwrap_or("(killed before reporting)"),
                    row["status"]
                );
            }
        }
    }
}

/// The cgroups named in `/proc/self/cgroup` lines that the tool printed.
fn toolpolicy_cgroups(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controller, path) = (parts.next()?, parts.next()?, parts.next()?);
            path.contains("/toolpolicy-")
                .then(|| (controller.to_string(), path.to_string()))
        })
        .collect()
}

/// Where `controller`'s v1 hierarchy is mounted.
fn v1_mount(controller: &str) -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut r = right.split(' ');
        let (fstype, _, options) = (r.next()?, r.next()?, r.next()?);
        (fstype == "cgroup" && options.split(',').any(|o| o == controller))
            .then(|| PathBuf::from(left.split(' ').nth(4).unwrap()))
    })
}

#[test]
fn each_run_gets_its_own_cgroups_and_they_are_removed_afterwards() {
    let host = sandbox::hostcaps::HostSupport::detect();
    let (Some(memory), Some(_)) = (&host.memory_cgroup, &host.pids_cgroup) else {
        kernel::missing("no writable memory and pids cgroups (root with the cgroup controllers)");
        return;
    };
    if memory.v2 {
        kernel::missing("this test reads v1 cgroup paths; the host's memory cgroup is v2");
        return;
    }
    let s = Scenario::new(User::Root);
    let policy = s.policy(
        "cg",
        &format!(
            "[limits]\nmemory_bytes = {}\nmax_processes = 16\ntimeout_ms = 30000\n",
            64 * MIB
        ),
    );
    for profile in Profile::available() {
        let runs: Vec<Report> = (0..2)
            .map(|_| {
                sandboxed(
                    User::Root,
                    &policy,
                    profile,
                    &["/bin/cat", "/proc/self/cgroup"],
                )
            })
            .collect();
        let mut seen = Vec::new();
        for out in &runs {
            assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
            let cgroups = toolpolicy_cgroups(&out.stdout);
            let controllers: Vec<&str> = cgroups.iter().map(|(c, _)| c.as_str()).collect();
            assert!(
                controllers.contains(&"memory") && controllers.contains(&"pids"),
                "the tool is not in its run's memory and pids cgroups: {}",
                out.stdout
            );
            for (controller, path) in cgroups {
                let dir = v1_mount(&controller)
                    .unwrap()
                    .join(path.trim_start_matches('/'));
                assert!(
                    !dir.exists(),
                    "{} outlived the run [{}]",
                    dir.display(),
                    profile.name()
                );
                assert!(!seen.contains(&dir), "two runs shared {}", dir.display());
                seen.push(dir);
            }
        }
        let report = report_of(&runs[0]);
        assert_eq!(
            rule(&report, &format!("limits.memory_bytes {}", 64 * MIB))["status"],
            "exact"
        );
    }
}

#[test]
fn a_declared_tmp_root_shows_the_host_tmp() {
    if !Profile::available().contains(&Profile::Strict) {
        return;
    }
    // A directory of the host's /tmp, with a file only the host has.
    let host = tempfile::Builder::new()
        .prefix("resources-hosttmp-")
        .tempdir_in("/tmp")
        .unwrap();
    let marker = host.path().join("marker");
    std::fs::write(&marker, "host-only\n").unwrap();
    let written = host.path().join("written");
    let s = Scenario::new(User::Root);
    let probe = probe_path();

    let write = s.policy(
        "tmpw",
        "net = \"deny\"\nexec = \"deny\"\n[fs]\nwrite = [\"/tmp/**\"]\n",
    );
    let out = sandboxed(
        User::Root,
        &write,
        Profile::Strict,
        &[&probe, "read", marker.to_str().unwrap(), "host-only"],
    );
    out.assert_succeeded("read the host's /tmp under write = [\"/tmp/**\"]");
    let out = sandboxed(
        User::Root,
        &write,
        Profile::Strict,
        &[&probe, "write", written.to_str().unwrap()],
    );
    out.assert_succeeded("write the host's /tmp under write = [\"/tmp/**\"]");
    assert!(written.exists(), "the write did not reach the host's /tmp");
    let report = report_of(&out);
    assert_eq!(rule(&report, "fs.write /tmp/**")["status"], "exact");

    // Read-only: the host's /tmp is shown, and not writable.
    std::fs::remove_file(&written).unwrap();
    let read = s.policy(
        "tmpr",
        "net = \"deny\"\nexec = \"deny\"\n[fs]\nread = [\"/tmp/**\"]\n",
    );
    sandboxed(
        User::Root,
        &read,
        Profile::Strict,
        &[&probe, "read", marker.to_str().unwrap(), "host-only"],
    )
    .assert_succeeded("read the host's /tmp under read = [\"/tmp/**\"]");
    sandboxed(
        User::Root,
        &read,
        Profile::Strict,
        &[&probe, "write", written.to_str().unwrap()],
    )
    .assert_blocked("write the host's /tmp under read = [\"/tmp/**\"]");
    assert!(!written.exists());

    // Roots the strict profile replaces with its own (/proc, /dev) are refused with the reason,
    // never shown as something else.
    for glob in ["/**", "/dev/shm/**", "/proc/**"] {
        let p = s.policy("own", &format!("[fs]\nwrite = [\"{glob}\"]\n"));
        let out = sandboxed(User::Root, &p, Profile::Strict, &["/bin/true"]);
        assert!(out.refused(), "{glob}: {}\n{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains("shows its own"),
            "{glob}: {}",
            out.stderr
        );
    }
}

#[test]
fn limits_below_what_a_program_needs_are_refused_with_the_reason() {
    let s = Scenario::new(User::Root);
    for profile in Profile::available() {
        for (limits, needle) in [
            (
                "memory_bytes = 10",
                "limits.memory_bytes 10: 10 bytes is below",
            ),
            ("max_open_files = 2", "limits.max_open_files 2: 2 is below"),
        ] {
            let p = s.policy("floor", &format!("[limits]\n{limits}\n"));
            let out = sandboxed(User::Root, &p, profile, &["/bin/true"]);
            assert!(
                out.refused(),
                "{limits} [{}]: {:?}\n{}",
                profile.name(),
                out.code,
                out.stderr
            );
            assert!(out.stderr.contains(needle), "{}", out.stderr);
        }
        // The floors themselves are enough for a shell.
        let p = s.policy(
            "floor-ok",
            &format!(
                "[limits]\nmemory_bytes = {}\nmax_open_files = {}\n",
                sandbox::plan::MIN_MEMORY_BYTES,
                sandbox::plan::MIN_OPEN_FILES
            ),
        );
        let out = sandboxed(User::Root, &p, profile, &["/bin/sh", "-c", "echo started"]);
        assert_eq!(out.code, Some(0), "[{}] {}", profile.name(), out.stderr);
        assert_eq!(out.stdout, "started\n");
    }
}
