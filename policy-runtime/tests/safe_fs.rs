//! The file methods of `ReadPath`/`WritePath` against symlink escapes, on a real filesystem.
//!
//! Each attack is first shown to work with `std::fs` on the same admitted name, then refused by
//! the safe method, on both backends: `openat2` (this kernel) and the portable cap-std one.
#![cfg(unix)]

use std::io;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use policy_runtime::beneath::{opened_by_name, with_portable_backend, BeneathError, Problem};
use policy_runtime::macro_support::CallArgs;
use policy_runtime::policy::ToolPolicy;
use policy_runtime::{ReadPath, WritePath};
use serde_json::json;

/// A tempdir holding `data/` (readable), `out/` (writable) and `secret/key.txt` (neither).
struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    policy: &'static ToolPolicy,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["data/sub", "out", "secret"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("secret/key.txt"), "SECRET").unwrap();
        std::fs::write(root.join("data/file.txt"), "inside").unwrap();
        let policy = ToolPolicy::from_json_str(
            "t",
            &format!(
                r#"{{"fs": {{"read": ["{0}/data/**"], "write": ["{0}/out/**"]}}}}"#,
                root.display()
            ),
        )
        .unwrap();
        World {
            _dir: dir,
            root,
            policy: Box::leak(Box::new(policy)),
        }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn s(&self, rel: &str) -> String {
        self.p(rel).to_str().unwrap().to_string()
    }

    /// The argument `path` as a `#[tool]` function receives it: parsed and bound by the
    /// generated code's `CallArgs`.
    fn read_arg(&self, rel: &str) -> ReadPath {
        let mut args = CallArgs::new("t", json!({"path": self.s(rel)}), &["path"])
            .unwrap()
            .beneath(self.policy);
        args.take("path").unwrap()
    }

    fn write_arg(&self, rel: &str) -> WritePath {
        let mut args = CallArgs::new("t", json!({"dest": self.s(rel)}), &["dest"])
            .unwrap()
            .beneath(self.policy);
        args.take("dest").unwrap()
    }

    fn secret(&self) -> String {
        std::fs::read_to_string(self.p("secret/key.txt")).unwrap()
    }
}

/// What `f` returns, after how many opens it made on this thread by the whole name (no symlink
/// on the way) rather than beneath a descriptor of the root.
fn by_name<R>(f: impl FnOnce() -> R) -> (u64, R) {
    let before = opened_by_name();
    let result = f();
    (opened_by_name() - before, result)
}

/// Runs `check` on the kernel's `openat2` backend and on the portable one.
fn both(check: impl Fn(&str)) {
    check("openat2");
    with_portable_backend(|| check("portable"));
}

/// A refusal: `PermissionDenied`, a `BeneathError` of `problem`, naming the argument (when the
/// path came from one) and the root.
#[track_caller]
fn assert_refused(err: &io::Error, problem: Problem, argument: Option<&str>, root: &Path) {
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
    let inner = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<BeneathError>())
        .unwrap_or_else(|| panic!("not a BeneathError: {err:?}"));
    assert_eq!(inner.problem(), problem, "{err}");
    let text = err.to_string();
    if let Some(argument) = argument {
        assert!(text.contains(&format!("argument `{argument}`")), "{text}");
    }
    assert!(text.contains(&root.display().to_string()), "{text}");
}

#[test]
fn read_through_a_directory_link_out_of_the_root_is_refused() {
    let w = World::new();
    symlink("../secret", w.p("data/link")).unwrap();
    // The gate admits the name, and std::fs follows the link to the secret.
    let path = w.read_arg("data/link/key.txt");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "SECRET");
    both(|backend| {
        let err = path.read_to_string().unwrap_err();
        assert_refused(&err, Problem::Escapes, Some("path"), &w.p("data"));
        assert!(path.open().is_err(), "{backend}");
        let dir = w.read_arg("data/link");
        assert_refused(
            &dir.list().unwrap_err(),
            Problem::Escapes,
            Some("path"),
            &w.p("data"),
        );
        // Links that stay inside the root are followed.
        assert_eq!(w.read_arg("data/file.txt").read().unwrap(), b"inside");
        assert_eq!(
            w.read_arg("data").list().unwrap(),
            ["file.txt", "link", "sub"],
            "{backend}"
        );
    });
}

#[test]
fn write_through_a_directory_link_out_of_the_root_is_refused() {
    let w = World::new();
    symlink("../secret", w.p("out/escape")).unwrap();
    let dest = w.write_arg("out/escape/pwned.md");
    std::fs::write(&dest, "pwned").unwrap();
    assert!(
        w.p("secret/pwned.md").exists(),
        "the attack works unconfined"
    );
    std::fs::remove_file(w.p("secret/pwned.md")).unwrap();
    both(|backend| {
        let err = dest.write("pwned").unwrap_err();
        assert_refused(&err, Problem::Escapes, Some("dest"), &w.p("out"));
        assert!(dest.create_new().is_err(), "{backend}");
        assert!(!w.p("secret/pwned.md").exists(), "{backend}");
        let ok = w.write_arg("out/report.md");
        ok.write(backend).unwrap();
        assert_eq!(
            std::fs::read_to_string(w.p("out/report.md")).unwrap(),
            backend
        );
    });
}

#[test]
fn create_through_a_dangling_link_out_of_the_root_is_refused() {
    let w = World::new();
    symlink("../secret/new.txt", w.p("out/dangling")).unwrap();
    let dest = w.write_arg("out/dangling");
    std::fs::write(&dest, "planted").unwrap();
    assert!(
        w.p("secret/new.txt").exists(),
        "the attack works unconfined"
    );
    std::fs::remove_file(w.p("secret/new.txt")).unwrap();
    both(|backend| {
        let err = dest.create().unwrap_err();
        assert_refused(&err, Problem::Escapes, Some("dest"), &w.p("out"));
        // `create_new` never follows a final symlink at all.
        assert!(dest.create_new().is_err(), "{backend}");
        assert!(!w.p("secret/new.txt").exists(), "{backend}");
    });
}

#[test]
fn rename_over_a_link_replaces_the_link_and_never_leaves_the_root() {
    let w = World::new();
    both(|backend| {
        let _ = std::fs::remove_file(w.p("out/link"));
        symlink("../secret/key.txt", w.p("out/link")).unwrap();
        std::fs::write(w.p("out/a.txt"), backend).unwrap();
        w.write_arg("out/a.txt")
            .rename_to(&w.write_arg("out/link"))
            .unwrap();
        let meta = std::fs::symlink_metadata(w.p("out/link")).unwrap();
        assert!(meta.is_file(), "{backend}: the link itself was replaced");
        assert_eq!(w.secret(), "SECRET", "{backend}");

        // Into, or out of, a directory that is a link out of the root.
        let _ = std::fs::remove_file(w.p("out/escape"));
        symlink("../secret", w.p("out/escape")).unwrap();
        let err = w
            .write_arg("out/link")
            .rename_to(&w.write_arg("out/escape/stolen"))
            .unwrap_err();
        assert_refused(&err, Problem::Escapes, Some("dest"), &w.p("out"));
        let err = w
            .write_arg("out/escape/key.txt")
            .rename_to(&w.write_arg("out/taken"))
            .unwrap_err();
        assert_refused(&err, Problem::Escapes, Some("dest"), &w.p("out"));
        assert!(!w.p("secret/stolen").exists() && w.p("secret/key.txt").exists());

        // Removing a link removes the link, not its target; removing through one is refused.
        w.write_arg("out/escape").remove_file().unwrap();
        assert!(w.p("secret").is_dir(), "{backend}");
        symlink("../secret", w.p("out/escape")).unwrap();
        let err = w.write_arg("out/escape/key.txt").remove_file().unwrap_err();
        assert_refused(&err, Problem::Escapes, Some("dest"), &w.p("out"));
        assert_eq!(w.secret(), "SECRET");
        std::fs::create_dir(w.p("out/empty")).unwrap();
        w.write_arg("out/empty").remove_dir().unwrap();
        std::fs::remove_file(w.p("out/escape")).unwrap();
        std::fs::remove_file(w.p("out/link")).unwrap();
    });
}

/// Renames names in a loop until stopped: each of `states` in turn is moved to `at` and back.
struct Flipper {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

impl Flipper {
    fn start(at: PathBuf, states: [PathBuf; 2]) -> Flipper {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut flips = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for from in &states {
                        std::fs::rename(from, &at).unwrap();
                        std::thread::yield_now();
                        std::fs::rename(&at, from).unwrap();
                    }
                    flips += 1;
                }
                flips
            })
        };
        Flipper { stop, thread }
    }

    /// Stops flipping; how many rounds it made.
    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// A name on the path that is, in turn, a real directory or file and a link out of the root,
/// at the first, a middle and the last position below the root. The gate checks once, as before
/// the body runs; then each read races the swap. `std::fs` lands outside; the safe read never,
/// whether it went by the whole name (which it does whenever the name is real at that moment:
/// counted) or beneath the root.
#[test]
fn a_link_swapped_in_between_check_and_open_never_leads_out() {
    let w = World::new();
    std::fs::create_dir_all(w.p("data/a")).unwrap();
    std::fs::remove_dir(w.p("data/sub")).unwrap();
    // (the swapped name, its real state, its link state, the path read through it)
    let positions = [
        ("data/sub", "../secret", "data/sub/key.txt"),
        ("data/a/sub", "../../secret", "data/a/sub/key.txt"),
        ("data/a/leaf", "../../secret/key.txt", "data/a/leaf"),
    ];
    for (at, out, read) in positions {
        let real = w.p(&format!("{at}-real"));
        let evil = w.p(&format!("{at}-evil"));
        if at == read {
            std::fs::write(&real, "inside").unwrap();
        } else {
            std::fs::create_dir(&real).unwrap();
            std::fs::write(real.join("key.txt"), "inside").unwrap();
        }
        symlink(out, &evil).unwrap();
        let path = w.read_arg(read);
        let flipper = Flipper::start(w.p(at), [real, evil]);
        // Rounds of 500 reads until `enough` holds (a busy machine may leave the swap in one
        // state for a while), at most 40: (inside, outside, refused).
        let attempt = |read: &dyn Fn() -> io::Result<String>, enough: &dyn Fn(&Seen) -> bool| {
            let mut seen = (0u32, 0u32, 0u32);
            for _ in 0..40 {
                for _ in 0..500 {
                    match read().as_deref() {
                        Ok("inside") => seen.0 += 1,
                        Ok(_) => seen.1 += 1,
                        Err(_) => seen.2 += 1,
                    }
                }
                if enough(&seen) {
                    break;
                }
            }
            seen
        };
        type Seen = (u32, u32, u32);
        let went_out = |seen: &Seen| seen.1 > 0;
        // At least 4000 safe reads race the swap.
        let stayed_in = |seen: &Seen| seen.0 > 0 && seen.0 + seen.1 + seen.2 >= 4000;
        let unconfined = attempt(&|| std::fs::read_to_string(&path), &went_out);
        let (named, safe) = by_name(|| attempt(&|| path.read_to_string(), &stayed_in));
        let portable = with_portable_backend(|| attempt(&|| path.read_to_string(), &stayed_in));
        let flips = flipper.stop();
        println!("{at}: flips {flips}; (inside, outside, refused): std {unconfined:?}, openat2 {safe:?} ({named} by name), portable {portable:?}");
        assert!(
            unconfined.1 > 0,
            "{at}: the race never let std::fs out: {unconfined:?}"
        );
        assert_eq!(safe.1, 0, "{at}: openat2: an open landed outside: {safe:?}");
        assert_eq!(
            portable.1, 0,
            "{at}: portable: an open landed outside: {portable:?}"
        );
        assert!(safe.0 > 0 && portable.0 > 0, "{at}: {safe:?} {portable:?}");
        assert!(named > 0, "{at}: no read went by the whole name");
    }
}

/// The write side of the race: a file created through a directory that is, in turn, a real
/// directory and a link out of the root. `std::fs::write` lands outside; the safe `write` never.
#[test]
fn a_link_swapped_in_between_check_and_create_never_leads_out() {
    let w = World::new();
    std::fs::create_dir(w.p("out/real")).unwrap();
    symlink("../secret", w.p("out/evil")).unwrap();
    let dest = w.write_arg("out/sub/planted.txt");
    let flipper = Flipper::start(w.p("out/sub"), [w.p("out/real"), w.p("out/evil")]);
    let planted = w.p("secret/planted.txt");
    // How many of `n` writes landed outside (each one is removed again).
    let outside = |write: &dyn Fn() -> io::Result<()>, n: u32| {
        let mut landed = 0;
        for _ in 0..n {
            let _ = write();
            if std::fs::remove_file(&planted).is_ok() {
                landed += 1;
            }
        }
        landed
    };
    let mut unconfined = 0;
    for _ in 0..20 {
        unconfined += outside(&|| std::fs::write(&dest, "x"), 500);
        if unconfined > 0 {
            break;
        }
    }
    let (named, safe) = by_name(|| outside(&|| dest.write("x"), 4000));
    let portable = with_portable_backend(|| outside(&|| dest.write("x"), 4000));
    flipper.stop();
    println!("landed outside: std {unconfined}, openat2 {safe} ({named} opened by name), portable {portable}");
    assert!(unconfined > 0, "the race never let std::fs out");
    assert_eq!(safe, 0, "openat2: a create landed outside");
    assert_eq!(portable, 0, "portable: a create landed outside");
}

#[test]
fn absolute_links_are_refused_even_when_they_point_inside() {
    let w = World::new();
    symlink(w.p("secret/key.txt"), w.p("data/abs_out")).unwrap();
    symlink(w.p("data/file.txt"), w.p("data/abs_in")).unwrap();
    assert_eq!(
        std::fs::read_to_string(w.p("data/abs_out")).unwrap(),
        "SECRET"
    );
    both(|_| {
        for name in ["data/abs_out", "data/abs_in"] {
            let err = w.read_arg(name).read().unwrap_err();
            assert_refused(&err, Problem::Escapes, Some("path"), &w.p("data"));
        }
    });
}

#[test]
fn dot_dot_inside_a_link_target_is_resolved_beneath_the_root() {
    let w = World::new();
    symlink("sub/../../secret/key.txt", w.p("data/up")).unwrap();
    symlink("sub/../file.txt", w.p("data/around")).unwrap();
    assert_eq!(std::fs::read_to_string(w.p("data/up")).unwrap(), "SECRET");
    both(|backend| {
        let err = w.read_arg("data/up").read().unwrap_err();
        assert_refused(&err, Problem::Escapes, Some("path"), &w.p("data"));
        assert_eq!(
            w.read_arg("data/around").read_to_string().unwrap(),
            "inside",
            "{backend}"
        );
    });
}

#[cfg(target_os = "linux")]
#[test]
fn proc_magic_links_are_refused() {
    let w = World::new();
    let policy: &'static ToolPolicy = Box::leak(Box::new(
        ToolPolicy::from_json_str("t", r#"{"fs": {"read": ["/proc/self/**"]}}"#).unwrap(),
    ));
    let secret = std::fs::File::open(w.p("secret/key.txt")).unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&secret);
    let hostname = std::fs::read("/etc/hostname").ok();
    let cases = [
        format!("/proc/self/fd/{fd}"),
        "/proc/self/root/etc/hostname".to_string(),
        format!("/proc/self/cwd/{}", w.s("secret/key.txt")),
    ];
    // Unconfined, the magic links lead anywhere.
    assert_eq!(std::fs::read_to_string(&cases[0]).unwrap(), "SECRET");
    if let Some(hostname) = &hostname {
        assert_eq!(&std::fs::read(&cases[1]).unwrap(), hostname);
    }
    both(|backend| {
        for raw in &cases {
            let path = ReadPath::admit(raw, policy).unwrap();
            let err = path.read().unwrap_err();
            assert_eq!(
                err.kind(),
                io::ErrorKind::PermissionDenied,
                "{backend} {raw}: {err}"
            );
            assert!(err.to_string().contains("/proc/self"), "{err}");
        }
    });
    drop(secret);
}

#[test]
fn created_files_never_get_setuid_or_setgid() {
    let w = World::new();
    // A setgid directory passes its group down, and would pass the bit to directories.
    std::fs::set_permissions(w.p("out"), std::fs::Permissions::from_mode(0o2777)).unwrap();
    both(|backend| {
        let name = format!("out/new-{backend}");
        w.write_arg(&name).write("x").unwrap();
        let mode = std::fs::metadata(w.p(&name)).unwrap().permissions().mode();
        assert_eq!(mode & 0o7000, 0, "{backend}: {mode:o}");
        assert_eq!(mode & 0o111, 0, "{backend}: not executable: {mode:o}");

        // An existing setuid or setgid file is refused before it is emptied.
        for bits in [0o4755, 0o2755] {
            std::fs::write(w.p("out/suid"), "original").unwrap();
            std::fs::set_permissions(w.p("out/suid"), std::fs::Permissions::from_mode(bits))
                .unwrap();
            let err = w.write_arg("out/suid").write("replaced").unwrap_err();
            assert_refused(&err, Problem::SetIdTarget, Some("dest"), &w.p("out"));
            assert_eq!(
                std::fs::read_to_string(w.p("out/suid")).unwrap(),
                "original"
            );
            std::fs::remove_file(w.p("out/suid")).unwrap();
        }
    });
}

#[test]
fn paths_without_a_root_are_refused() {
    let w = World::new();
    let err = ReadPath::new(w.p("data/file.txt")).read().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    assert!(err.to_string().contains("ReadPath::admit"), "{err}");
    // A write target the policy only lets the tool read: bound as a read, refused as a write.
    let mut args = CallArgs::new("t", json!({"dest": w.s("data/file.txt")}), &["dest"])
        .unwrap()
        .beneath(w.policy);
    let dest: WritePath = args.take("dest").unwrap();
    let err = dest.write("x").unwrap_err();
    assert!(err.to_string().contains("not writable"), "{err}");
    assert_eq!(
        std::fs::read_to_string(w.p("data/file.txt")).unwrap(),
        "inside"
    );
    // Without a policy (no `fs`), nothing has a root.
    let policy = ToolPolicy::from_json_str("t", "{}").unwrap();
    assert!(ReadPath::admit(&w.s("data/file.txt"), &policy).is_err());
    // The folder itself cannot be removed through a path beneath it.
    let root = WritePath::admit(&w.s("out"), w.policy).unwrap();
    assert_eq!(
        root.remove_dir().unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
}

/// A hard link is a name under the root for the same inode: it is opened like any file. Only
/// someone who can already write under the root can make one, and these methods never do.
#[test]
fn hard_links_are_names_under_the_root() {
    let w = World::new();
    std::fs::hard_link(w.p("secret/key.txt"), w.p("data/hard")).unwrap();
    assert_eq!(w.read_arg("data/hard").read_to_string().unwrap(), "SECRET");
}

/// Roots stay open between calls (for speed); a root replaced since is noticed and reopened.
/// A path argument that went beneath its root (a symlink on the way) keeps the directory it
/// first resolved beneath; one opened by its whole name goes through whatever the root's path
/// names at that moment, as the portable backend does.
#[test]
fn a_replaced_root_is_reopened_for_new_arguments() {
    let w = World::new();
    both(|backend| {
        std::fs::write(w.p("data/file.txt"), "first").unwrap();
        let _ = std::fs::remove_file(w.p("data/alias"));
        symlink("file.txt", w.p("data/alias")).unwrap();
        let held = w.read_arg("data/file.txt");
        let held_link = w.read_arg("data/alias");
        assert_eq!(held.read_to_string().unwrap(), "first", "{backend}");
        assert_eq!(held_link.read_to_string().unwrap(), "first", "{backend}");
        std::fs::rename(w.p("data"), w.p(&format!("old-{backend}"))).unwrap();
        std::fs::create_dir(w.p("data")).unwrap();
        std::fs::write(w.p("data/file.txt"), "second").unwrap();
        symlink("file.txt", w.p("data/alias")).unwrap();
        for name in ["data/file.txt", "data/alias"] {
            let text = w.read_arg(name).read_to_string().unwrap();
            assert_eq!(text, "second", "{backend} {name}");
        }
        assert_eq!(held.read_to_string().unwrap(), "second", "{backend}");
        let kept = if backend == "openat2" {
            "first"
        } else {
            "second"
        };
        assert_eq!(held_link.read_to_string().unwrap(), kept, "{backend}");
    });
}

/// Path arguments in a list or nested in an object are bound as they are parsed, too.
#[test]
fn lists_and_nested_path_arguments_are_bound() {
    #[derive(serde::Deserialize)]
    struct Job {
        input: ReadPath,
        output: Option<WritePath>,
    }
    let w = World::new();
    symlink("../secret", w.p("data/link")).unwrap();
    let mut args = CallArgs::new(
        "t",
        json!({
            "files": [w.s("data/file.txt"), w.s("data/link/key.txt")],
            "job": {"input": w.s("data/file.txt"), "output": w.s("out/r.md")},
        }),
        &["files", "job"],
    )
    .unwrap()
    .beneath(w.policy);
    let files: Vec<ReadPath> = args.take("files").unwrap();
    assert_eq!(files[0].read().unwrap(), b"inside");
    let err = files[1].read().unwrap_err();
    assert_refused(&err, Problem::Escapes, Some("files"), &w.p("data"));
    let job: Job = args.take("job").unwrap();
    assert_eq!(job.input.read_to_string().unwrap(), "inside");
    job.output.unwrap().write("done").unwrap();
    assert_eq!(std::fs::read_to_string(w.p("out/r.md")).unwrap(), "done");
}

/// With no symlink on the path, every operation opens it by its whole name (rename and removal
/// open the parent that way); the portable backend never does.
#[test]
fn paths_without_links_are_opened_by_their_whole_name() {
    let w = World::new();
    let (n, bytes) = by_name(|| w.read_arg("data/file.txt").read().unwrap());
    assert_eq!((n, bytes.as_slice()), (1, &b"inside"[..]));
    assert_eq!(by_name(|| w.read_arg("data").list().unwrap()).0, 1);
    assert_eq!(
        by_name(|| w.write_arg("out/a.txt").write("a").unwrap()).0,
        1
    );
    let (from, to) = (w.write_arg("out/a.txt"), w.write_arg("out/b.txt"));
    assert_eq!(by_name(|| from.rename_to(&to).unwrap()).0, 2);
    assert_eq!(by_name(|| to.remove_file().unwrap()).0, 1);
    assert!(!w.p("out/b.txt").exists());
    let portable = with_portable_backend(|| by_name(|| w.read_arg("data/file.txt").read()));
    assert_eq!(portable.0, 0);
    assert_eq!(portable.1.unwrap(), b"inside");
    // A missing file is explained beneath the root, like every failure by name.
    let err = w.read_arg("data/missing.txt").read().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert!(
        err.to_string().contains(&w.p("data").display().to_string()),
        "{err}"
    );
}

/// A link out of the root at any position below it (the first name, a middle one, the last) is
/// never followed by the whole-name open, for any operation: each is refused beneath the root,
/// with the root named. The same positions holding links that stay inside are followed, beneath
/// the root.
#[test]
fn a_link_at_any_position_is_never_followed_by_name() {
    let w = World::new();
    // (the link, where it points out, a path through it)
    let cases = [
        ("L", "../secret", "L/key.txt"),
        ("a/L", "../../secret", "a/L/key.txt"),
        ("a/b/L", "../../../secret", "a/b/L/key.txt"),
        ("a/b/leaf", "../../../secret/key.txt", "a/b/leaf"),
    ];
    for top in ["data", "out"] {
        std::fs::create_dir_all(w.p(&format!("{top}/a/b"))).unwrap();
        for (link, out, _) in cases {
            symlink(out, w.p(&format!("{top}/{link}"))).unwrap();
        }
    }
    for (link, _, through) in cases {
        let read = w.read_arg(&format!("data/{through}"));
        let dest = w.write_arg(&format!("out/{through}"));
        assert_eq!(std::fs::read_to_string(&read).unwrap(), "SECRET", "{link}");
        both(|backend| {
            let (n, err) = by_name(|| read.read().unwrap_err());
            assert_refused(&err, Problem::Escapes, Some("path"), &w.p("data"));
            let (m, err) = by_name(|| dest.write("pwned").unwrap_err());
            assert_refused(&err, Problem::Escapes, Some("dest"), &w.p("out"));
            assert_eq!((n, m), (0, 0), "{backend} {link}: opened by name");
            assert_eq!(w.secret(), "SECRET", "{backend} {link}");
            if through != link {
                let dir = w.read_arg(&format!(
                    "data/{}",
                    Path::new(through).parent().unwrap().display()
                ));
                assert_refused(
                    &dir.list().unwrap_err(),
                    Problem::Escapes,
                    Some("path"),
                    &w.p("data"),
                );
                let err = dest.remove_file().unwrap_err();
                assert_refused(&err, Problem::Escapes, Some("dest"), &w.p("out"));
                let err = w.write_arg("out/a/x").rename_to(&dest).unwrap_err();
                assert_eq!(
                    err.kind(),
                    io::ErrorKind::PermissionDenied,
                    "{backend} {link}: {err}"
                );
            }
        });
    }
    assert_eq!(w.secret(), "SECRET");
    assert_eq!(std::fs::read_dir(w.p("secret")).unwrap().count(), 1);

    // Links that stay inside, at the same positions.
    std::fs::write(w.p("data/a/b/f.txt"), "deep").unwrap();
    symlink("a", w.p("data/ia")).unwrap();
    symlink("b", w.p("data/a/ib")).unwrap();
    symlink("f.txt", w.p("data/a/b/if")).unwrap();
    for through in ["data/ia/b/f.txt", "data/a/ib/f.txt", "data/a/b/if"] {
        both(|backend| {
            let (n, text) = by_name(|| w.read_arg(through).read_to_string().unwrap());
            assert_eq!((n, text.as_str()), (0, "deep"), "{backend} {through}");
        });
    }
}

/// A root whose own path has a symlink in it (the policy's path, followed as written) is never
/// opened by name: the root itself a link, or a folder above it. Its files are read beneath it,
/// and a link out of it is still refused.
#[test]
fn a_root_whose_path_has_a_link_is_read_beneath_it() {
    let w = World::new();
    symlink("../secret", w.p("data/link")).unwrap();
    symlink("data", w.p("data-alias")).unwrap();
    symlink(".", w.p("here")).unwrap();
    for root in [w.p("data-alias"), w.p("here/data")] {
        let policy = ToolPolicy::from_json_str(
            "t",
            &format!(r#"{{"fs": {{"read": ["{}/**"]}}}}"#, root.display()),
        )
        .unwrap();
        let file = ReadPath::admit(&format!("{}/file.txt", root.display()), &policy).unwrap();
        let link = ReadPath::admit(&format!("{}/link/key.txt", root.display()), &policy).unwrap();
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "SECRET");
        both(|backend| {
            let (n, text) = by_name(|| file.read_to_string().unwrap());
            assert_eq!(
                (n, text.as_str()),
                (0, "inside"),
                "{backend} {}",
                root.display()
            );
            let (n, err) = by_name(|| link.read().unwrap_err());
            assert_eq!(n, 0);
            assert_refused(&err, Problem::Escapes, None, &root);
        });
    }
}

/// Which way is tried first only changes the cost: after a read through a link that stays in
/// the root, the next reads under that root are opened beneath it first (no failed attempt by
/// name), and within a bounded number of opens one goes by name again. Every read gets the
/// same contents, and a link out stays refused whichever way comes first.
#[test]
fn after_a_link_the_root_is_opened_beneath_first_for_a_while() {
    if !policy_runtime::beneath::uses_openat2() {
        println!("skipped: this kernel has no openat2, so there is no open by name");
        return;
    }
    let w = World::new();
    std::fs::write(w.p("data/sub/f.txt"), "deep").unwrap();
    symlink("sub", w.p("data/ln")).unwrap();
    symlink("../secret", w.p("data/out")).unwrap();
    let (n, text) = by_name(|| w.read_arg("data/ln/f.txt").read_to_string().unwrap());
    assert_eq!((n, text.as_str()), (0, "deep"));
    let mut ways = Vec::new();
    for _ in 0..40 {
        let (n, text) = by_name(|| w.read_arg("data/file.txt").read_to_string().unwrap());
        assert_eq!(text, "inside");
        ways.push(n);
        let err = w.read_arg("data/out/key.txt").read().unwrap_err();
        assert_refused(&err, Problem::Escapes, Some("path"), &w.p("data"));
    }
    assert_eq!(
        ways[0], 0,
        "the read after a link went by name first: {ways:?}"
    );
    let back = ways.iter().position(|&n| n == 1);
    assert!(
        back.is_some_and(|i| i <= 16),
        "no read went by name again soon: {ways:?}"
    );
    // Reads by name that meet no link keep that order.
    assert!(ways.iter().skip(back.unwrap()).all(|&n| n == 1), "{ways:?}");
}
