//! The strict child makes the Landlock rule of a bound path from the bind's own descriptor
//! (one open per declared root, not two). These tests pin what that must not change: a rule
//! always names what the tool sees at the path in its view, and a root replaced after the
//! policy was planned (and its plan cached) is seen, and ruled, as it is at the time of the run,
//! never wider.

#[path = "support/kernel.rs"]
mod kernel;

use std::ffi::OsString;

use policy_runtime::ToolPolicy;
use sandbox::runner::{run, RunOptions};
use sandbox::Profile;

fn policy(json: &str) -> ToolPolicy {
    ToolPolicy::from_json_str("view_rules.json", json).unwrap()
}

fn strict() -> RunOptions {
    RunOptions::default().profile(Profile::Strict)
}

fn sh(script: &str) -> Vec<OsString> {
    vec!["/bin/sh".into(), "-c".into(), script.into()]
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A declared root renamed away and recreated after the first run: the next run (same cached
/// plan) shows the new directory with the declared rights and nothing of the old one.
#[test]
fn a_root_recreated_after_planning_is_seen_and_ruled_as_it_is_at_the_run() {
    if !kernel::supports(Profile::Strict) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let root = base.join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("f"), "first\n").unwrap();
    let p = policy(&format!(
        r#"{{"fs": {{"read": ["{}/**"]}}, "net": "deny", "exec": "allow", "env": "deny"}}"#,
        root.display()
    ));
    let script = format!(
        "cat {root}/f; ls {root}; echo x > {root}/new && echo WROTE; cat {base}/moved/f && echo OLD",
        root = root.display(),
        base = base.display()
    );
    let first = run(&p, &sh(&script), &strict()).unwrap();
    assert!(text(&first.stdout).starts_with("first\nf\n"), "{first:?}");

    std::fs::rename(&root, base.join("moved")).unwrap();
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("f"), "second\n").unwrap();
    std::fs::write(root.join("g"), "").unwrap();
    let second = run(&p, &sh(&script), &strict()).unwrap();
    let out = text(&second.stdout);
    assert!(
        out.starts_with("second\nf\ng\n"),
        "the new directory, readable: {second:?}"
    );
    assert!(
        !out.contains("WROTE"),
        "the read root stays read-only: {second:?}"
    );
    assert!(
        !out.contains("OLD"),
        "the old directory is not reachable: {second:?}"
    );
    assert!(!root.join("new").exists() && !base.join("moved/new").exists());
}

/// A declared file root that the view then mounts a file of its own over (the egress resolver
/// files): the rule follows the file the tool sees, so the tool reads the sandbox's resolver
/// configuration, not the host's and not an `EACCES`.
#[test]
fn a_file_mounted_over_a_bound_path_is_ruled_by_what_the_view_shows() {
    if !kernel::supports(Profile::Strict) {
        return;
    }
    let Ok(host_conf) = std::fs::read_to_string("/etc/resolv.conf") else {
        eprintln!("skipped: this host has no readable /etc/resolv.conf to declare");
        return;
    };
    if std::fs::symlink_metadata("/etc/resolv.conf").is_ok_and(|m| m.file_type().is_symlink()) {
        eprintln!("skipped: /etc/resolv.conf is a symlink here, which a root may not name");
        return;
    }
    let p = policy(
        r#"{"fs": {"read": ["/etc/resolv.conf"]}, "net": {"hosts": ["example.com:443"]},
            "exec": "deny", "env": "deny"}"#,
    );
    let out = run(
        &p,
        &["/bin/cat".into(), "/etc/resolv.conf".into()],
        &strict(),
    )
    .unwrap();
    assert!(out.success(), "{out:?}");
    let seen = text(&out.stdout);
    assert!(
        seen.starts_with("# written by toolpolicy egress"),
        "the sandbox's own resolver file: {seen:?}"
    );
    assert_ne!(seen, host_conf);
}

/// Roots whose parent in the view holds nothing else get one Landlock rule on that parent
/// (`rule_cover`), outside the private `/tmp` whose rule covers its roots anyway. The tool
/// must reach exactly what the roots' own rules gave: read roots stay read-only next to a
/// write root, the parent directories stay unwritable, and host entries beside the roots stay
/// out of the view. Listing the group's directory works only through the group's rule, so
/// the test also shows that the rule was made; a group with the wrong rights is caught by the
/// unit tests of `rule_cover` (here the read-only binds would still refuse the writes).
#[test]
fn grouped_roots_grant_what_their_own_rules_granted_and_nothing_more() {
    if !kernel::supports(Profile::Strict) {
        return;
    }
    // Outside /tmp: the private /tmp's own rule already covers roots inside it.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    for sub in ["ro/r1", "ro/r2", "rw/w", "ro/secret"] {
        std::fs::create_dir_all(base.join(sub)).unwrap();
        std::fs::write(base.join(sub).join("f"), format!("{sub}\n")).unwrap();
    }
    let p = policy(&format!(
        r#"{{"fs": {{"read": ["{b}/ro/r1/**", "{b}/ro/r2/**"], "write": ["{b}/rw/w/**"]}},
            "net": "deny", "exec": "allow", "env": "deny"}}"#,
        b = base.display()
    ));
    let script = format!(
        "cat {b}/ro/r1/f {b}/ro/r2/f {b}/rw/w/f; ls {b}/ro | tr '\\n' ' '; echo;
         echo x > {b}/ro/r1/f && echo WROTE-READ-ROOT;
         echo x > {b}/ro/r1/new && echo CREATED-IN-READ-ROOT;
         mkdir {b}/ro/new && echo MKDIR-IN-GROUP-DIR;
         echo x > {b}/ro/new-file && echo CREATED-IN-GROUP-DIR;
         cat {b}/ro/secret/f && echo READ-SECRET;
         echo w > {b}/rw/w/new && echo WROTE-WRITE-ROOT;
         mkdir {b}/rw/new && echo MKDIR-BESIDE-WRITE-ROOT",
        b = base.display()
    );
    let out = run(&p, &sh(&script), &strict()).unwrap();
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("ro/r1\nro/r2\nrw/w\nr1 r2 \n"),
        "every root readable, the group's directory lists only the roots: {out:?}"
    );
    assert!(stdout.contains("WROTE-WRITE-ROOT"), "{out:?}");
    for refused in [
        "WROTE-READ-ROOT",
        "CREATED-IN-READ-ROOT",
        "MKDIR-IN-GROUP-DIR",
        "CREATED-IN-GROUP-DIR",
        "READ-SECRET",
        "MKDIR-BESIDE-WRITE-ROOT",
    ] {
        assert!(!stdout.contains(refused), "{refused}: {out:?}");
    }
    assert_eq!(
        std::fs::read_to_string(base.join("ro/r1/f")).unwrap(),
        "ro/r1\n"
    );
    assert!(!base.join("ro/r1/new").exists() && !base.join("ro/new").exists());
}
