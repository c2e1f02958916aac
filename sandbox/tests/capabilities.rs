//! No capability for the tool, even from a program that carries file capabilities, in both
//! profiles, as root and as uid 65534.
//!
//! The strict child leaves the bounding set its user namespace starts with (the kernel makes
//! it full in every new user namespace): what keeps the command without capabilities is its
//! empty permitted set under NO_NEW_PRIVS, with which an `execve` never raises that set. This
//! test is the evidence: a copy of the probe given `security.capability` (CAP_NET_RAW,
//! effective) is executed by the sandboxed tool and reports its own capability sets: empty, in
//! the strict profile always, in the hardened one when the kernel starts it at all (its
//! bounding set is empty, and the kernel refuses with EPERM a program whose effective file
//! capabilities it cannot all grant). On the bare host the same copy, run as uid 65534, reports
//! CAP_NET_RAW, so the kernel and the filesystem honour the attribute and the test can fail.
//!
//! The other route to privilege, a set-user-ID root program, gains nothing either: as uid
//! 65534 on the bare host a root-owned set-user-ID copy of the probe runs with effective uid 0
//! and root's capabilities, and sandboxed with neither.
//!
//! The command line runs once (`policy-sandbox run`: its own view and namespaces); the library's
//! runner of many runs lends the strict child a view namespace, after which the child makes
//! its user namespace with `unshare`, so that path is run too.
//!
//! Setting the attribute needs `CAP_SETFCAP`: without root the test is skipped with a reason.

mod common;

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;

use common::{binaries, probe, users, Mode, Profile, Report, Scenario, User};

/// `security.capability` version 2: CAP_NET_RAW permitted, with the effective flag.
const NET_RAW_EFFECTIVE: [u8; 20] = [
    0x01, 0x00, 0x00, 0x02, // VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE
    0x00, 0x20, 0x00, 0x00, // permitted, low word: bit 13
    0x00, 0x00, 0x00, 0x00, // inheritable, low word
    0x00, 0x00, 0x00, 0x00, // permitted, high word
    0x00, 0x00, 0x00, 0x00, // inheritable, high word
];

/// CAP_NET_RAW in `/proc/self/status` hexadecimal.
const NET_RAW: u64 = 1 << 13;

/// A copy of the probe in the scenario's read root, carrying [`NET_RAW_EFFECTIVE`].
fn capable_copy(s: &Scenario) -> String {
    let path = s.path("data/capable-probe");
    fs::copy(&binaries().probe, &path).expect("copy the probe");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod the copy");
    let c = CString::new(std::path::Path::new(&path).as_os_str().as_bytes()).unwrap();
    // SAFETY: setxattr with valid strings and a live buffer.
    let rc = unsafe {
        libc::setxattr(
            c.as_ptr(),
            c"security.capability".as_ptr(),
            NET_RAW_EFFECTIVE.as_ptr().cast(),
            NET_RAW_EFFECTIVE.len(),
            0,
        )
    };
    assert_eq!(
        rc,
        0,
        "setxattr security.capability on {path}: {}",
        std::io::Error::last_os_error()
    );
    path
}

/// The capability set `key` (`CapPrm`, `CapEff`) the copy reported.
fn set_of(report: &Report, key: &str, label: &str) -> u64 {
    let value = report
        .status_field(key)
        .unwrap_or_else(|| panic!("{label}: the copy reported no {key}\n{report:?}"));
    u64::from_str_radix(&value, 16)
        .unwrap_or_else(|_| panic!("{label}: {key}={value} is not hexadecimal"))
}

#[test]
fn a_program_with_file_capabilities_gains_none() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: setting security.capability needs root (CAP_SETFCAP)");
        return;
    }
    for user in users() {
        let s = Scenario::new(user);
        let copy = capable_copy(&s);
        let args = ["exec", "0", copy.as_str(), "status"];
        let bare = probe(user, Mode::Bare, &args);
        let label = format!("the capable copy, bare [as {}]", user.name());
        let permitted = set_of(&bare, "CapPrm", &label);
        assert_ne!(
            permitted & NET_RAW,
            0,
            "{label}: the file capability was not honoured, so nothing below could fail\n{bare:?}"
        );
        if user == User::Nobody {
            assert_eq!(
                permitted, NET_RAW,
                "{label}: uid 65534 holds only the file's capability"
            );
        }
        // `allow`, not a list of the two programs, which the hardened profile refuses.
        let policy = s.policy("capable", &s.exec_allowed_policy());
        for profile in Profile::available() {
            let label = format!("the capable copy [as {}, {}]", user.name(), profile.name());
            let report = probe(user, Mode::Sandboxed(&policy, profile), &args);
            let ran = report
                .stdout
                .lines()
                .any(|l| l.starts_with("SUCCEEDED exec"));
            // The hardened command's bounding set is empty, and the kernel refuses to start a
            // program whose effective file capabilities it cannot all grant.
            let refused = report
                .stdout
                .lines()
                .any(|l| l.starts_with("BLOCKED exec: errno=1 "));
            if profile == Profile::Hardened && refused {
                eprintln!("{label}: refused by the kernel (EPERM)");
                continue;
            }
            assert!(ran, "{label}: the copy did not run\n{report:?}");
            for key in ["CapPrm", "CapEff"] {
                assert_eq!(
                    set_of(&report, key, &label),
                    0,
                    "{label}: {key} is not empty\n{report:?}"
                );
            }
            if profile == Profile::Strict {
                // What the full bounding set rests on besides NO_NEW_PRIVS: no uid 0 inside.
                assert_eq!(
                    report.status_field("Uid").as_deref(),
                    Some("1000"),
                    "{label}: the strict tool's uid\n{report:?}"
                );
            }
            eprintln!("{label}: {}", report.result_line().unwrap_or_default());
        }
    }
}

#[test]
fn a_leased_strict_run_holds_no_capability() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: setting security.capability needs root (CAP_SETFCAP)");
        return;
    }
    if !Profile::available().contains(&Profile::Strict) {
        return;
    }
    let s = Scenario::new(User::Root);
    let copy = capable_copy(&s);
    let text = s
        .base_policy()
        .replace("exec = \"deny\"", "exec = \"allow\"");
    let policy = policy_runtime::ToolPolicy::from_toml_str("capable.toml", &text).unwrap();
    let argv: Vec<std::ffi::OsString> = vec![
        binaries().probe.clone().into(),
        "exec".into(),
        "0".into(),
        copy.into(),
        "status".into(),
    ];
    let options = sandbox::RunOptions::default().profile(sandbox::Profile::Strict);
    let label = "the capable copy [library runner, strict, as root]";
    for round in 0..2 {
        // The second run takes the namespace the first gave back.
        let out = sandbox::run(&policy, &argv, &options).expect("the run starts");
        let report = Report {
            command: format!("{label}, run {round}"),
            code: out.code,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        for key in ["CapPrm", "CapEff"] {
            assert_eq!(set_of(&report, key, label), 0, "{label}: {key}\n{report:?}");
        }
        assert_eq!(
            report.status_field("Uid").as_deref(),
            Some("1000"),
            "{label}: the strict tool's uid\n{report:?}"
        );
        let status = report.result_line().unwrap_or_default();
        eprintln!("{label}, run {round}: {status}");
    }
}

#[test]
fn a_set_user_id_root_program_gains_nothing() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a root-owned set-user-ID program needs root to make");
        return;
    }
    if !users().contains(&User::Nobody) {
        // `users()` has said why (no `setpriv`); as root the bit would change nothing.
        return;
    }
    let user = User::Nobody;
    let s = Scenario::new(user);
    let copy = s.path("data/setuid-probe");
    fs::copy(&binaries().probe, &copy).expect("copy the probe");
    fs::set_permissions(&copy, fs::Permissions::from_mode(0o4755)).expect("chmod 4755");
    let args = ["exec", "0", copy.as_str(), "status"];
    let bare = probe(user, Mode::Bare, &args);
    let label = "the set-user-ID root copy, bare [as nobody]";
    assert_eq!(
        bare.status_field("Euid").as_deref(),
        Some("0"),
        "{label}: the bit was not honoured, so nothing below could fail\n{bare:?}"
    );
    assert_ne!(
        set_of(&bare, "CapEff", label),
        0,
        "{label}: root's capabilities"
    );
    let policy = s.policy("setuid", &s.exec_allowed_policy());
    for profile in Profile::available() {
        let label = format!("the set-user-ID root copy [as nobody, {}]", profile.name());
        let report = probe(user, Mode::Sandboxed(&policy, profile), &args);
        assert!(
            report
                .stdout
                .lines()
                .any(|l| l.starts_with("SUCCEEDED exec")),
            "{label}: the copy did not run\n{report:?}"
        );
        let inner = match profile {
            Profile::Strict => "1000",
            Profile::Hardened => "65534",
        };
        for key in ["Uid", "Euid"] {
            assert_eq!(
                report.status_field(key).as_deref(),
                Some(inner),
                "{label}: {key}\n{report:?}"
            );
        }
        for key in ["CapPrm", "CapEff"] {
            assert_eq!(
                set_of(&report, key, &label),
                0,
                "{label}: {key}\n{report:?}"
            );
        }
        eprintln!("{label}: {}", report.result_line().unwrap_or_default());
    }
}
