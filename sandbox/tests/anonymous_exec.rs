//! An exec allow-list against anonymous executables: a program copied into a memfd or an
//! `O_TMPFILE` file has no path in any root, so Landlock's Execute right and the `noexec`
//! binds cannot name it. With `exec = { allow = ["echo"] }`, each attack first runs on the bare
//! host (where it must start `/bin/sh`), then sandboxed, where it must be blocked (strict) or
//! the policy refused (hardened, which cannot enforce exec lists at all).

mod common;

use std::path::Path;
use std::time::Duration;

use common::{binaries, escape, kernel, run_with_timeout, users, Attempt, Profile, Scenario};

/// The dynamic loader of x86_64 glibc, allowed as the interpreter of every listed program.
const LOADER: &str = "/lib64/ld-linux-x86-64.so.2";

/// The usual policy with `exec` narrowed to `echo` (and the probe itself, which starts it).
fn echo_only(s: &Scenario) -> String {
    let probe = binaries().probe.to_str().unwrap().to_string();
    s.base_policy().replace(
        "exec = \"deny\"",
        &format!("exec = {{ allow = [\"echo\", \"{probe}\"] }}"),
    )
}

const SH_EXIT: [&str; 2] = ["-c", "exit 42"];

#[test]
fn a_memfd_copy_cannot_be_executed_under_an_exec_list() {
    escape(
        "fexecve of /bin/sh copied into a memfd, exec = [echo]",
        |s| {
            Some(Attempt::new(
                &["exec-memfd", "42", "/bin/sh", SH_EXIT[0], SH_EXIT[1]],
                echo_only(s),
            ))
        },
    );
    if !Path::new(LOADER).exists() {
        kernel::missing("no x86_64 glibc loader at /lib64; the loader route cannot be tried");
        return;
    }
    escape(
        "ld.so /proc/self/fd/N on a sealed memfd copy of /bin/sh, exec = [echo]",
        |s| {
            Some(Attempt::new(
                &[
                    "exec-loader-memfd",
                    "42",
                    LOADER,
                    "/bin/sh",
                    SH_EXIT[0],
                    SH_EXIT[1],
                ],
                echo_only(s),
            ))
        },
    );
}

#[test]
fn an_o_tmpfile_copy_cannot_be_executed_under_an_exec_list() {
    for dir in ["/tmp", "work"] {
        escape(
            &format!("execveat of an O_TMPFILE copy of /bin/sh in {dir}"),
            |s| {
                let dir = if dir == "work" {
                    s.path("work")
                } else {
                    dir.into()
                };
                Some(Attempt::new(
                    &[
                        "exec-tmpfile",
                        "42",
                        &dir,
                        "/bin/sh",
                        SH_EXIT[0],
                        SH_EXIT[1],
                    ],
                    echo_only(s),
                ))
            },
        );
    }
}

#[test]
fn the_listed_program_still_runs() {
    for user in users() {
        if !Profile::available().contains(&Profile::Strict) {
            return;
        }
        let s = Scenario::new(user);
        let policy = s.policy("policy", &echo_only(&s));
        let report = common::probe(
            user,
            common::Mode::Sandboxed(&policy, Profile::Strict),
            &["exec", "0", "/bin/echo", "hello"],
        );
        let line = report.result_line().unwrap_or_default();
        assert!(
            line.starts_with("SUCCEEDED "),
            "[as {}] {line}\n{}",
            user.name(),
            report.stderr
        );
    }
}

#[test]
fn every_tmpfs_is_noexec_under_an_exec_list() {
    if !Profile::available().contains(&Profile::Strict) {
        return;
    }
    for user in users() {
        let s = Scenario::new(user);
        let policy = s
            .base_policy()
            .replace("exec = \"deny\"", "exec = { allow = [\"cat\", \"echo\"] }");
        let policy = s.policy("policy", &policy);
        let mut argv = user.prefix();
        argv.extend(
            [
                binaries().sandbox.to_str().unwrap(),
                "run",
                "--policy",
                policy.to_str().unwrap(),
                "--profile",
                "strict",
                "--",
                "cat",
                "/proc/self/mountinfo",
            ]
            .map(String::from),
        );
        let report = run_with_timeout(&argv, Duration::from_secs(60));
        assert_eq!(report.code, Some(0), "{}", report.stderr);
        let tmpfs: Vec<&str> = report
            .stdout
            .lines()
            .filter(|l| {
                l.split(" - ")
                    .nth(1)
                    .is_some_and(|t| t.starts_with("tmpfs "))
            })
            .collect();
        assert!(!tmpfs.is_empty(), "no tmpfs at all?\n{}", report.stdout);
        for line in tmpfs {
            let options = line.split_whitespace().nth(5).unwrap_or_default();
            let mount_point = line.split_whitespace().nth(4).unwrap_or_default();
            // The root of the view holds only mount points and symlinks; nothing on it can be
            // written (it is read-only).
            if mount_point == "/" {
                assert!(options.split(',').any(|o| o == "ro"), "{line}");
                continue;
            }
            assert!(
                options.split(',').any(|o| o == "noexec"),
                "[as {}] a tmpfs without noexec under an exec list: {line}",
                user.name()
            );
        }
    }
}
