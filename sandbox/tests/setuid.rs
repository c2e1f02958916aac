//! Host root through set-user-ID files: no file a sandboxed tool creates or changes may carry
//! S_ISUID, S_ISGID or file capabilities after the run, in both profiles, as root and as
//! uid 65534.
//!
//! In the strict profile the tool's files belong to the runner on the host, so when the runner
//! is root a `chmod 4755` would leave a root shell behind. Every attack below first runs on the
//! bare host, where it must leave such a file, then under both profiles, where it must be
//! blocked; the host is then checked with `stat`/`getxattr` on the files themselves.

mod common;

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{chown, MetadataExt, PermissionsExt};
use std::path::Path;

use common::traces::{absent, no_setid, remove};
use common::{escape, probe, users, Attempt, Mode, Profile, Scenario, User};

/// A regular file of the run's user in the write root, mode 0755, recreated before each run.
fn plain_file(s: &Scenario, rel: &str) -> (String, impl Fn() + 'static) {
    let path = s.path(rel);
    let uid = s.user.uid();
    let reset_path = path.clone();
    let reset = move || {
        let _ = fs::remove_file(&reset_path);
        fs::write(&reset_path, "#!/bin/sh\n").unwrap();
        chown(&reset_path, Some(uid), Some(uid)).unwrap();
        fs::set_permissions(&reset_path, fs::Permissions::from_mode(0o755)).unwrap();
    };
    reset();
    (path, reset)
}

#[test]
fn the_chmod_family_cannot_set_setid_bits() {
    for (action, mode) in [
        ("chmod", "4755"),
        ("chmod", "2755"),
        ("fchmod", "4755"),
        ("fchmodat2", "6755"),
    ] {
        escape(
            &format!("{action} {mode} on a file in the write root"),
            |s| {
                let (path, reset) = plain_file(s, "work/tool-made");
                Some(
                    Attempt::new(&[action, mode, &path], s.base_policy())
                        .reset(reset)
                        .no_trace(no_setid(&path)),
                )
            },
        );
    }
}

#[test]
fn a_program_outside_the_roots_cannot_be_made_setuid() {
    // As the hardened profile (no mount namespace, metadata writes open because the policy has
    // a write root) could reach a root-owned system program when the runner is root.
    escape("chmod 4755 on a program in no root", |s| {
        let (path, reset) = plain_file(s, "outside/system-program");
        Some(
            Attempt::new(&["chmod", "4755", &path], s.base_policy())
                .reset(reset)
                .no_trace(no_setid(&path)),
        )
    });
}

#[test]
fn creating_calls_cannot_create_setid_files() {
    let cases = [
        ("open", "4755"),
        ("open", "2755"),
        ("openat", "4755"),
        ("creat", "4755"),
        ("openat2", "4755"),
        ("tmpfile", "4755"),
        ("mknod", "4755"),
        ("mknodat", "2755"),
    ];
    for (via, mode) in cases {
        escape(&format!("create a {mode} file with {via}"), |s| {
            let path = s.path("work/created");
            Some(
                Attempt::new(&["create", via, mode, &path], s.base_policy())
                    .reset(remove(&path))
                    .no_trace(no_setid(&path)),
            )
        });
    }
}

/// A set-user-ID program of the test's user (root on CI) in the read root, as a host's
/// `/usr/bin/su` would be.
fn host_setuid_program(s: &Scenario) -> String {
    let path = s.path("data/setuid-program");
    fs::copy("/bin/true", &path).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o4755)).unwrap();
    path
}

#[test]
fn install_and_cp_cannot_copy_setid_modes() {
    let install = ["/usr/bin/install", "/bin/install"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let cp = ["/usr/bin/cp", "/bin/cp"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let (Some(install), Some(cp)) = (install, cp) else {
        common::kernel::missing("coreutils install/cp are not installed");
        return;
    };
    escape("install -m 4755 into the write root", |s| {
        let (src, dst) = (s.path("data/file"), s.path("work/installed"));
        Some(
            Attempt::new(
                &["exec", "0", install, "-m", "4755", &src, &dst],
                s.exec_allowed_policy(),
            )
            .reset(remove(&dst))
            .no_trace(no_setid(&dst)),
        )
    });
    escape(
        "cp --preserve=mode of a set-user-ID program into the write root",
        |s| {
            let (src, dst) = (host_setuid_program(s), s.path("work/copied"));
            Some(
                Attempt::new(
                    &["exec", "0", cp, "--preserve=mode", &src, &dst],
                    s.exec_allowed_policy(),
                )
                .reset(remove(&dst))
                .no_trace(no_setid(&dst)),
            )
        },
    );
}

#[test]
fn a_setuid_program_cannot_be_hard_linked_into_the_write_root() {
    // Only the file's owner may link it (fs.protected_hardlinks), so the bare attack works
    // for the test's own user alone.
    escape(
        "hard link of a set-user-ID program into the write root",
        |s| {
            if s.user != User::Root {
                return None;
            }
            let (src, dst) = (host_setuid_program(s), s.path("work/linked"));
            Some(
                Attempt::new(&["hardlink", &src, &dst], s.base_policy())
                    .reset(remove(&dst))
                    .no_trace(absent(&dst)),
            )
        },
    );
}

#[test]
fn a_write_clears_the_setid_bits_of_an_existing_file() {
    // Without CAP_FSETID a write clears the bits, so the bare attack works for root only.
    escape("append to a set-user-ID file in the write root", |s| {
        if s.user.uid() != 0 {
            return None;
        }
        let (path, reset) = plain_file(s, "work/setuid-made-by-host");
        let setuid = path.clone();
        let reset = move || {
            reset();
            fs::set_permissions(&setuid, fs::Permissions::from_mode(0o4755)).unwrap();
        };
        reset();
        let check = path.clone();
        Some(
            Attempt::new(&["write-keeps-setid", &path], s.base_policy())
                .reset(reset)
                .no_trace(move || match fs::metadata(&check) {
                    // The host's own bit is gone or kept only where no write happened.
                    Ok(m) if m.mode() & 0o6000 != 0 && m.len() > "#!/bin/sh\n".len() as u64 => {
                        Err(format!("{check} was written and kept mode {:o}", m.mode()))
                    }
                    _ => Ok(()),
                }),
        )
    });
}

/// `security.capability` version 2 granting CAP_NET_RAW, effective.
const FILE_CAPABILITY: &str = "0100000200200000000000000000000000000000";

fn no_file_capability(path: &str) -> impl Fn() -> Result<(), String> + 'static {
    let path = path.to_string();
    move || {
        let c = CString::new(Path::new(&path).as_os_str().as_bytes()).unwrap();
        let name = CString::new("security.capability").unwrap();
        // SAFETY: a size query with valid strings.
        let size = unsafe { libc::getxattr(c.as_ptr(), name.as_ptr(), std::ptr::null_mut(), 0) };
        if size < 0 {
            Ok(())
        } else {
            Err(format!("{path} carries security.capability"))
        }
    }
}

#[test]
fn file_capabilities_cannot_be_set() {
    // Setting them needs CAP_SETFCAP, so the bare attack works for root only.
    escape(
        "setxattr security.capability on a file in the write root",
        |s| {
            if s.user.uid() != 0 {
                return None;
            }
            let (path, reset) = plain_file(s, "work/capable");
            Some(
                Attempt::new(
                    &["setxattr", &path, "security.capability", FILE_CAPABILITY],
                    s.base_policy(),
                )
                .reset(reset)
                .no_trace(no_file_capability(&path)),
            )
        },
    );
}

/// Runs the probe sandboxed (no bare run: the action is benign) and returns its result line.
fn sandboxed(user: User, profile: Profile, s: &Scenario, policy: &str, args: &[&str]) -> String {
    let policy = s.policy("policy", policy);
    let report = probe(user, Mode::Sandboxed(&policy, profile), args);
    report.result_line().unwrap_or_default().to_string()
}

#[test]
fn ordinary_modes_and_setgid_directories_keep_working() {
    for user in users() {
        for profile in Profile::available() {
            let s = Scenario::new(user);
            let label = format!("[as {}, {}]", user.name(), profile.name());
            // A file created in a set-group-ID directory takes its group, never its bit.
            let dir = s.path("work/shared");
            fs::create_dir(&dir).unwrap();
            chown(&dir, Some(user.uid()), Some(user.uid())).unwrap();
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o2775)).unwrap();
            let inside = format!("{dir}/new-file");
            let line = sandboxed(
                user,
                profile,
                &s,
                &s.base_policy(),
                &["create", "open", "0755", &inside],
            );
            assert!(
                line.starts_with("SUCCEEDED "),
                "create in a setgid dir {label}: {line}"
            );
            no_setid(&inside)().unwrap_or_else(|e| panic!("{label}: {e}"));
            // chmod without set-id bits is ordinary work in a write root.
            let (path, _) = plain_file(&s, "work/script");
            let line = sandboxed(
                user,
                profile,
                &s,
                &s.base_policy(),
                &["chmod", "700", &path],
            );
            if profile == Profile::Hardened && user == User::Root {
                // A root runner's hardened tool changes no metadata: its uid owns the
                // system's files (see hardened_seccomp.rs).
                assert!(line.starts_with("BLOCKED "), "chmod 700 {label}: {line}");
            } else {
                assert!(line.starts_with("SUCCEEDED "), "chmod 700 {label}: {line}");
            }
        }
    }
}
