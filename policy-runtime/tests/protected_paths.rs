//! Protected paths in process: the gate denies writes to them (`fs.protected_path`) even under
//! a write glob that covers them, and the `WritePath` methods refuse them also when a harmless
//! name leads there through a symlink. Each attack is first shown to work on the same file with
//! `std::fs` (no protection), then refused; ordinary writes beside them keep working.
#![cfg(unix)]

use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use policy_runtime::denial::DenialCode;
use policy_runtime::gate::check_path;
use policy_runtime::policy::ToolPolicy;
use policy_runtime::protected::{set_process_list, ProtectedKind, ProtectedPaths};
use policy_runtime::tool::Access;
use policy_runtime::WritePath;

/// One world per test binary (the protected list is process-wide): `proj/` (a repository with
/// hooks and config) and `home/` (rc files, `.ssh`), both under one write glob.
struct World {
    root: PathBuf,
    policy: ToolPolicy,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let root = std::fs::canonicalize(dir).unwrap();
        for d in ["proj/.git/hooks", "proj/src", "home/.ssh"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for (f, text) in [
            ("proj/.git/config", "[core]\n"),
            ("proj/.git/hooks/pre-push", "#!/bin/sh\n"),
            ("home/.ssh/id_rsa", "key\n"),
            ("home/.profile", "# profile\n"),
            ("audit.jsonl", ""),
        ] {
            std::fs::write(root.join(f), text).unwrap();
        }
        let mut list = ProtectedPaths::defaults(&root.join("proj"), &root.join("home"));
        list.add_file(root.join("audit.jsonl"), ProtectedKind::AuditLog)
            .unwrap();
        set_process_list(list);
        let policy = ToolPolicy::from_json_str(
            "t",
            &format!(r#"{{"fs": {{"write": ["{}/**"]}}}}"#, root.display()),
        )
        .unwrap();
        World { root, policy }
    })
}

fn p(rel: &str) -> String {
    world().root.join(rel).display().to_string()
}

fn protected_denial(rel: &str) {
    protected_denial_for(rel, Access::Write);
}

fn protected_denial_for(rel: &str, access: Access) {
    let denial = check_path(&world().policy, &p(rel), access, None)
        .expect_err(&format!("{rel} ({access:?}) must be denied"));
    assert_eq!(
        denial.code,
        DenialCode::ProtectedPath,
        "{rel}: {}",
        denial.reason
    );
}

#[test]
fn the_gate_denies_writes_to_every_protected_path_under_a_write_glob() {
    for rel in [
        "proj/.git/hooks/pre-push",
        "proj/.git/hooks/pre-commit", // does not exist: may not be created either
        "proj/.git/config",
        "proj/.git", // holds the hooks: renaming it away is a write to it
        "proj",
        "home/.profile",
        "home/.bashrc", // absent: may not be created
        "home/.ssh/authorized_keys",
        "home/.ssh",
        "audit.jsonl",
    ] {
        protected_denial(rel);
    }
    // Beside them, writes keep working; reads of protected files are not writes.
    assert!(check_path(&world().policy, &p("proj/src/lib.rs"), Access::Write, None).is_ok());
    assert!(check_path(&world().policy, &p("proj/.git/index"), Access::Write, None).is_ok());
    assert!(check_path(&world().policy, &p("proj/.git/config"), Access::Read, None).is_ok());
    // `..` does not hide a protected path.
    protected_denial("proj/src/../.git/hooks/x");
}

/// An argument of unknown direction that only a write glob admits may be a write: it is
/// refused on a protected path. Under a read glob as well, it is a read and passes.
#[test]
fn an_access_of_unknown_direction_is_a_write_where_only_a_write_glob_admits_it() {
    for rel in ["proj/.git/config", "home/.ssh/id_rsa", "proj/.git"] {
        protected_denial_for(rel, Access::Unknown);
    }
    let readable = ToolPolicy::from_json_str(
        "t",
        &format!(
            r#"{{"fs": {{"read": ["{0}/**"], "write": ["{0}/**"]}}}}"#,
            world().root.display()
        ),
    )
    .unwrap();
    assert!(check_path(&readable, &p("proj/.git/config"), Access::Unknown, None).is_ok());
    assert!(check_path(&readable, &p("proj/.git/config"), Access::Write, None).is_err());
}

#[test]
fn write_path_admit_is_the_gate() {
    let err = WritePath::admit(&p("home/.bashrc"), &world().policy).unwrap_err();
    assert_eq!(err.code, DenialCode::ProtectedPath);
}

fn refused(what: &str, r: io::Result<impl Sized>) {
    let e = r.err().unwrap_or_else(|| panic!("{what}: succeeded"));
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{what}: {e}");
}

/// A harmless name under the write glob that is a symlink into `.git/hooks` or to `.profile`.
#[test]
fn write_path_methods_refuse_symlinks_into_protected_paths() {
    let w = world();
    let hooks_link = w.root.join("proj/src/hooks");
    let rc_link = w.root.join("proj/src/rc");
    symlink(w.root.join("proj/.git/hooks"), &hooks_link).unwrap();
    symlink(w.root.join("home/.profile"), &rc_link).unwrap();
    // Unprotected, the names lead there: std::fs writes the hook.
    let probe = hooks_link.join("probe");
    std::fs::write(&probe, "x").unwrap();
    assert!(w.root.join("proj/.git/hooks/probe").exists());
    std::fs::remove_file(w.root.join("proj/.git/hooks/probe")).unwrap();

    let via_dir = WritePath::admit(&p("proj/src/hooks/pre-commit"), &w.policy).unwrap();
    refused(
        "create a hook through a linked directory",
        via_dir.write("evil"),
    );
    assert!(!w.root.join("proj/.git/hooks/pre-commit").exists());
    let via_file = WritePath::admit(&p("proj/src/rc"), &w.policy).unwrap();
    refused("write .profile through a link", via_file.write("evil"));
    assert_eq!(
        std::fs::read_to_string(w.root.join("home/.profile")).unwrap(),
        "# profile\n"
    );
    std::fs::remove_file(&hooks_link).unwrap();
    std::fs::remove_file(&rc_link).unwrap();
}

#[test]
fn rename_and_remove_of_protected_paths_are_refused() {
    let w = world();
    // Bound without the gate (`beneath`): the methods refuse on their own.
    let bound = |rel: &str| WritePath::beneath(&w.root, w.root.join(rel));
    refused(
        "rename .git away",
        bound("proj/.git").rename_to(&bound("proj/old-git")),
    );
    refused(
        "rename over the config",
        bound("proj/src/new").rename_to(&bound("proj/.git/config")),
    );
    refused("unlink the config", bound("proj/.git/config").remove_file());
    refused("unlink the audit log", bound("audit.jsonl").remove_file());
    refused(
        "remove the hooks directory",
        bound("proj/.git/hooks").remove_dir(),
    );
    assert!(Path::new(&p("proj/.git/config")).exists());
    // Ordinary files beside them: written, renamed, removed.
    let a = bound("proj/src/a.txt");
    a.write("a").unwrap();
    let b = bound("proj/src/b.txt");
    a.rename_to(&b).unwrap();
    b.remove_file().unwrap();
}
