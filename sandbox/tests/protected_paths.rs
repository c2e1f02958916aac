//! Protected paths inside a write root, against the real kernel: `policy-sandbox run` (strict)
//! with a write root over a repository, as the current user (root on CI) and as uid 65534.
//!
//! Each attack on `.git/hooks`, `.git/config` and a protected file of the runner's (`--protect`)
//! is first run bare, where it must work (so the test can fail), then under the sandbox, where
//! it must be refused and leave the host unchanged; ordinary writes beside them keep working.
//! The hardened profile, which has no mount namespace, reports the same paths `not_enforced`.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{kernel, users, User};

const PS: &str = env!("CARGO_BIN_EXE_policy-sandbox");

struct Repo {
    _dir: tempfile::TempDir,
    base: PathBuf,
    policy: PathBuf,
}

/// `base/proj` (the write root) with `.git/hooks/pre-push`, `.git/config`, `notes.txt`
/// (protected with `--protect`) and `src/`.
fn repo(user: User) -> Repo {
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    reset(&base);
    let policy = base.join("policy.json");
    fs::write(
        &policy,
        format!(r#"{{"fs": {{"write": ["{}/proj/**"]}}}}"#, base.display()),
    )
    .unwrap();
    if user == User::Nobody {
        let ok = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&base)
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    Repo {
        _dir: dir,
        base,
        policy,
    }
}

/// Puts the repository back as it was (after a bare attack).
fn reset(base: &Path) {
    let proj = base.join("proj");
    let _ = fs::remove_dir_all(&proj);
    for d in ["proj/.git/hooks", "proj/src"] {
        fs::create_dir_all(base.join(d)).unwrap();
    }
    for (f, text) in [
        ("proj/.git/hooks/pre-push", "#!/bin/sh\n"),
        ("proj/.git/config", "[core]\n"),
        ("proj/notes.txt", "notes\n"),
    ] {
        fs::write(base.join(f), text).unwrap();
    }
}

/// The host still holds every protected file as it was, and no new hook.
fn untouched(base: &Path) -> Result<(), String> {
    for (f, text) in [
        ("proj/.git/hooks/pre-push", "#!/bin/sh\n"),
        ("proj/.git/config", "[core]\n"),
        ("proj/notes.txt", "notes\n"),
    ] {
        let path = base.join(f);
        let meta = fs::symlink_metadata(&path).map_err(|e| format!("{f}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("{f} is no longer a plain file"));
        }
        let now = fs::read_to_string(&path).map_err(|e| format!("{f}: {e}"))?;
        if now != text {
            return Err(format!("{f} changed to {now:?}"));
        }
    }
    let hooks: Vec<_> = fs::read_dir(base.join("proj/.git/hooks"))
        .map_err(|e| e.to_string())?
        .map(|e| e.unwrap().file_name())
        .collect();
    if hooks.len() != 1 {
        return Err(format!("hooks now: {hooks:?}"));
    }
    Ok(())
}

/// `sh -c SCRIPT` in `base/proj`: bare, or under `policy-sandbox run --profile PROFILE`.
fn sh(repo: &Repo, user: User, sandbox: Option<&str>, script: &str, extra: &[&str]) -> Output {
    let mut argv: Vec<String> = user.prefix();
    if let Some(profile) = sandbox {
        argv.extend(
            [PS, "run", "--policy"]
                .iter()
                .map(|s| s.to_string())
                .chain([repo.policy.display().to_string()])
                .chain(["--profile".into(), profile.into()])
                .chain(extra.iter().map(|s| s.to_string()))
                .chain(["--".into()]),
        );
    }
    argv.extend(["/bin/sh".into(), "-c".into(), script.into()]);
    Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(repo.base.join("proj"))
        .output()
        .unwrap()
}

const ATTACKS: &[(&str, &str)] = &[
    ("write the config", "echo evil > .git/config"),
    ("truncate the config", ": > .git/config"),
    ("append to a hook", "echo evil >> .git/hooks/pre-push"),
    ("create a new hook", "echo evil > .git/hooks/pre-commit"),
    ("unlink the config", "rm .git/config"),
    (
        "rename a file over the config",
        "echo evil > x && mv -f x .git/config",
    ),
    (
        "replace the config with a symlink",
        "ln -sf /etc/passwd .git/config",
    ),
    (
        "replace the config by renaming a symlink over it",
        "ln -s /etc/passwd y && mv -Tf y .git/config",
    ),
    (
        "hard-link the config and write the link",
        "ln .git/config hl && echo evil > hl",
    ),
    (
        "rename .git away and make a new one",
        "mv .git old-git && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit",
    ),
    ("remove the hooks directory", "rm -rf .git/hooks"),
    ("write the runner's protected file", "echo evil > notes.txt"),
    ("rename the runner's protected file", "mv notes.txt n2"),
];

fn strict_available() -> bool {
    if kernel::landlock_abi() < 4 || !kernel::user_namespaces() {
        kernel::missing("the strict profile needs Landlock ABI 4 and user namespaces");
        return false;
    }
    true
}

#[test]
fn strict_keeps_protected_paths_read_only_inside_a_write_root() {
    if !strict_available() {
        return;
    }
    for user in users() {
        let repo = repo(user);
        let notes = repo.base.join("proj/notes.txt").display().to_string();
        let protect = ["--protect", notes.as_str()];
        let mut failures = Vec::new();
        for (what, script) in ATTACKS {
            // Bare, the attack works.
            let bare = sh(&repo, user, None, script, &[]);
            let worked = bare.status.success() && untouched(&repo.base).is_err();
            assert!(
                worked,
                "{} bare `{what}` must work: {:?}",
                user.name(),
                String::from_utf8_lossy(&bare.stderr)
            );
            reset(&repo.base);
            if user == User::Nobody {
                Command::new("chown")
                    .args(["-R", "65534:65534"])
                    .arg(&repo.base)
                    .status()
                    .unwrap();
            }
            let out = sh(&repo, user, Some("strict"), script, &protect);
            if out.status.code() == Some(125) {
                failures.push(format!(
                    "{what}: refused to run: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            } else if let Err(e) = untouched(&repo.base) {
                failures.push(format!("{what}: {e}"));
            }
            reset(&repo.base);
            if user == User::Nobody {
                Command::new("chown")
                    .args(["-R", "65534:65534"])
                    .arg(&repo.base)
                    .status()
                    .unwrap();
            }
        }
        assert!(failures.is_empty(), "{}: {failures:#?}", user.name());
        // Beside them, writes, renames and removals keep working.
        let out = sh(
            &repo,
            user,
            Some("strict"),
            "echo ok > src/a && mv src/a src/b && mkdir d && mv d e && rmdir e && echo ok > .git/index && cat .git/config",
            &protect,
        );
        assert!(
            out.status.success(),
            "{}: {}",
            user.name(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "[core]\n");
        assert_eq!(
            fs::read_to_string(repo.base.join("proj/src/b")).unwrap(),
            "ok\n"
        );
    }
}

/// The report lists each protected path with a typed status: strict keeps the covered ones
/// (exact, by a read-only mount); hardened cannot (not_enforced, naming the write root); a
/// protected path that does not exist cannot be kept by a mount either.
#[test]
fn the_report_says_how_each_protected_path_is_held() {
    if !strict_available() {
        return;
    }
    let repo = repo(User::Root);
    let missing = repo.base.join("proj/missing.txt").display().to_string();
    let report = |profile: &str| -> serde_json::Value {
        let out = Command::new(PS)
            .args(["run", "--report", "--profile", profile, "--policy"])
            .arg(&repo.policy)
            .args(["--protect", &missing, "--", "/bin/true"])
            .current_dir(repo.base.join("proj"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        let line = text.lines().find(|l| l.starts_with('{')).expect("report");
        serde_json::from_str(line).unwrap()
    };
    let status_of = |report: &serde_json::Value, suffix: &str| -> (String, serde_json::Value) {
        let row = report["protected"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"].as_str().unwrap().ends_with(suffix))
            .unwrap_or_else(|| panic!("no row {suffix}: {report}"))
            .clone();
        (row["status"].as_str().unwrap().to_string(), row)
    };
    let strict = report("strict");
    for suffix in ["/.git/hooks", "/.git/config", "/policy.json"] {
        assert_eq!(status_of(&strict, suffix).0, "exact", "{suffix}: {strict}");
    }
    let (status, row) = status_of(&strict, "/missing.txt");
    assert_eq!(status, "not_enforced");
    assert!(row["reason"].as_str().unwrap().contains("does not exist"));
    if kernel::landlock_abi() >= 6 {
        let hardened = report("hardened");
        let (status, row) = status_of(&hardened, "/.git/config");
        assert_eq!(status, "not_enforced", "{hardened}");
        assert!(row["write_root"].as_str().unwrap().ends_with("/proj"));
        assert_eq!(status_of(&hardened, "/policy.json").0, "exact");
    }
}
