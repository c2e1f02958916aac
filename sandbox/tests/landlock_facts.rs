//! Kernel facts about Landlock rules and mounts that the strict view's design rests on.
//!
//! A Landlock rule is tied to an inode, and the kernel decides an access by walking up from
//! the file to the root, crossing mounts by their mount points. Two consequences:
//!
//! * a mount point hidden by a mount is skipped on the way up: a rule on a directory does not
//!   reach a filesystem mounted over it (only the mounted root's own rule, or one above the
//!   mount point, does). A ruleset built once per policy therefore cannot grant a run's own
//!   per-run mounts (`/proc`, the private `/tmp`, `/dev`) through rules on the directories they
//!   are mounted on: those need rules made per run, on the new mounts' roots;
//! * the walk enters a bind at the bind's root and leaves it at its mount point: a rule on the
//!   *source's* parent directory does not reach through a bind of a subdirectory, and one on
//!   the directory holding the mount point does (one rule there covers every bind in it).
//!
//! And a mount tree built once (a detached tmpfs holding binds) and cloned whole per run keeps
//! its inodes: a rule made once on the built tree, on a bind or on the tree's own root (the
//! binds' common parent), applies in every clone.
//!
//! And one fact about procfs that a view held in a user namespace of its own rests on (the
//! design an unprivileged runner's template takes, `sandbox/src/mounts/held.rs`):
//! a procfs is mounted in a user namespace only where one is already fully visible. A root
//! pivoted into holds none, so its `/proc` mount is refused (`EPERM`) unless the host's
//! `/proc` is bound there first, under it.
//!
//! Each case runs in a forked child, in a private user and mount namespace (nothing reaches
//! the host's mount table), that mounts, confines itself and opens one file; the exit code says
//! what the kernel answered. Skipped with a reason without Landlock or user namespaces (a
//! failure under `TOOLPOLICY_REQUIRE_KERNEL=1`).

#[path = "support/kernel.rs"]
mod kernel;
#[path = "support/raw_kernel.rs"]
mod raw;

use std::ffi::CString;
use std::os::fd::RawFd;
use std::path::Path;

/// What the kernel answered to the final `open` of a case.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Allowed,
    /// `EACCES`: Landlock refused.
    Denied,
    /// The case could not be set up (the step's number) or the open failed otherwise.
    Broken(i32),
}

const ALLOWED: i32 = 0;
const DENIED: i32 = 1;
const OTHER_OPEN_ERROR: i32 = 2;

/// One case's steps, run in the child. Each returns `false` on failure; they only make system
/// calls on what the parent prepared (the child of a multi-threaded process must not allocate).
struct Child {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Child {
    fn new() -> Child {
        // SAFETY: getters without pointers.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        Child {
            uid_map: format!("0 {uid} 1").into_bytes(),
            gid_map: format!("0 {gid} 1").into_bytes(),
        }
    }

    /// Forks; the child enters a new user and mount namespace (root in it, mapped to us), makes
    /// every mount private, runs `case` and exits with its answer.
    fn run(&self, case: &dyn Fn() -> i32) -> Answer {
        // SAFETY: the child makes system calls only, on memory prepared before the fork, and
        // leaves with `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let code = if self.enter() { case() } else { 10 };
            // SAFETY: ending the forked child without running the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "case child died: {status:#x}");
        match libc::WEXITSTATUS(status) {
            ALLOWED => Answer::Allowed,
            DENIED => Answer::Denied,
            other => Answer::Broken(other),
        }
    }

    fn enter(&self) -> bool {
        // SAFETY: system calls on static strings and buffers owned by `self`.
        unsafe {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                return false;
            }
            let write = |file: &[u8], content: &[u8]| {
                let fd = libc::open(file.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
                let ok = fd >= 0
                    && libc::write(fd, content.as_ptr().cast(), content.len())
                        == content.len() as isize;
                if fd >= 0 {
                    libc::close(fd);
                }
                ok
            };
            if !(write(b"/proc/self/setgroups\0", b"deny")
                && write(b"/proc/self/uid_map\0", &self.uid_map)
                && write(b"/proc/self/gid_map\0", &self.gid_map))
            {
                return false;
            }
            let flags = libc::MS_REC | libc::MS_PRIVATE;
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                flags,
                std::ptr::null(),
            ) == 0
        }
    }
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).expect("no NUL in a temporary path")
}

/// Mounts a fresh tmpfs on `target`.
fn mount_tmpfs(target: &CString) -> bool {
    // SAFETY: mount with valid strings.
    unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            0,
            std::ptr::null(),
        ) == 0
    }
}

/// Binds `source` onto `target`.
fn bind(source: &CString, target: &CString) -> bool {
    // SAFETY: mount with valid strings.
    unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        ) == 0
    }
}

/// Creates an empty file.
fn create(path: &CString) -> bool {
    // SAFETY: open and close of our own descriptor.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
            0o644,
        );
        fd >= 0 && libc::close(fd) == 0
    }
}

/// Opens a directory to make a rule from (`O_PATH`, as the sandbox does).
fn open_dir(path: &CString) -> RawFd {
    // SAFETY: open with a valid string.
    unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    }
}

/// Confines the calling process to reading beneath the directories `rules` (descriptors):
/// the read rights (ABI 1) are the only ones these rulesets handle.
fn restrict(rules: &[RawFd]) -> bool {
    let read = raw::READ_FILE | raw::READ_DIR;
    let ruleset = raw::create_ruleset(read);
    ruleset >= 0
        && rules
            .iter()
            .all(|&fd| fd >= 0 && raw::add_rule(ruleset, fd, read))
        && raw::restrict_self(ruleset)
}

/// Opens `path` for reading: the case's answer.
fn read(path: &CString) -> i32 {
    // SAFETY: open and close of our own descriptor.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::close(fd);
            return ALLOWED;
        }
        if *libc::__errno_location() == libc::EACCES {
            DENIED
        } else {
            OTHER_OPEN_ERROR
        }
    }
}

/// A temporary tree: `dir/` holding `host-file`, `src/sub/file`, and an empty `bind-point/`.
struct Tree {
    _tmp: tempfile::TempDir,
    root: CString,
    root_path: std::path::PathBuf,
    dir: CString,
    host_file: CString,
    /// Where a file is made on the tmpfs mounted over `dir`; never on the host.
    on_tmpfs: CString,
    on_tmpfs_host: std::path::PathBuf,
    src: CString,
    sub: CString,
    sub_file: CString,
    bind_point: CString,
    through_bind: CString,
}

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::Builder::new()
            .prefix("toolpolicy-landlock-facts-")
            .tempdir()
            .expect("temporary directory");
        // Rules and mounts need the real path (the temporary directory may be reached through
        // a symlink).
        let root = std::fs::canonicalize(tmp.path()).expect("canonical temporary directory");
        std::fs::create_dir_all(root.join("dir")).expect("dir");
        std::fs::write(root.join("dir/host-file"), b"host").expect("host file");
        std::fs::create_dir_all(root.join("src/sub")).expect("src/sub");
        std::fs::write(root.join("src/sub/file"), b"sub").expect("sub file");
        std::fs::create_dir_all(root.join("bind-point")).expect("bind point");
        Tree {
            root: cpath(&root),
            root_path: root.clone(),
            dir: cpath(&root.join("dir")),
            host_file: cpath(&root.join("dir/host-file")),
            on_tmpfs: cpath(&root.join("dir/on-tmpfs")),
            on_tmpfs_host: root.join("dir/on-tmpfs"),
            src: cpath(&root.join("src")),
            sub: cpath(&root.join("src/sub")),
            sub_file: cpath(&root.join("src/sub/file")),
            bind_point: cpath(&root.join("bind-point")),
            through_bind: cpath(&root.join("bind-point/file")),
            _tmp: tmp,
        }
    }

    /// Mounts a tmpfs over `dir` and makes a file on it (set-up steps fail with 20 and 21).
    fn cover_dir(&self) -> Result<(), i32> {
        if !mount_tmpfs(&self.dir) {
            return Err(20);
        }
        if !create(&self.on_tmpfs) {
            return Err(21);
        }
        Ok(())
    }

    /// After a case: the file made on the tmpfs must not be on the host (the mount was real).
    fn assert_host_untouched(&self) {
        assert!(
            !self.on_tmpfs_host.exists(),
            "the file made on the tmpfs appeared on the host: the mount did not happen"
        );
    }
}

fn ready() -> bool {
    if kernel::landlock_abi() < 1 {
        kernel::missing("Landlock is not available");
        return false;
    }
    if !kernel::user_namespaces() {
        kernel::missing("user namespaces are not available");
        return false;
    }
    true
}

fn answer(result: Result<(), i32>, then: impl FnOnce() -> i32) -> i32 {
    match result {
        Ok(()) => then(),
        Err(step) => step,
    }
}

#[test]
fn a_rule_on_a_directory_grants_its_files_when_nothing_is_mounted_over_it() {
    if !ready() {
        return;
    }
    let tree = Tree::new();
    let got = Child::new().run(&|| {
        let rule = open_dir(&tree.dir);
        answer(if restrict(&[rule]) { Ok(()) } else { Err(30) }, || {
            read(&tree.host_file)
        })
    });
    assert_eq!(got, Answer::Allowed);
}

#[test]
fn a_rule_on_a_mount_point_does_not_reach_the_filesystem_mounted_over_it() {
    if !ready() {
        return;
    }
    let tree = Tree::new();
    let got = Child::new().run(&|| {
        // The rule is made on the directory itself, before anything hides it.
        let rule = open_dir(&tree.dir);
        answer(tree.cover_dir(), || {
            answer(if restrict(&[rule]) { Ok(()) } else { Err(30) }, || {
                read(&tree.on_tmpfs)
            })
        })
    });
    tree.assert_host_untouched();
    assert_eq!(
        got,
        Answer::Denied,
        "a rule on the hidden mount point granted a file on the tmpfs mounted over it"
    );
}

#[test]
fn a_rule_on_the_mounted_root_or_above_the_mount_point_reaches_the_mounted_filesystem() {
    if !ready() {
        return;
    }
    let tree = Tree::new();
    let child = Child::new();
    // The tmpfs's own root: opened after the mount.
    let on_root = child.run(&|| {
        answer(tree.cover_dir(), || {
            let rule = open_dir(&tree.dir);
            answer(if restrict(&[rule]) { Ok(()) } else { Err(30) }, || {
                read(&tree.on_tmpfs)
            })
        })
    });
    // The mount point's parent: the walk goes on past the hidden mount point.
    let above = child.run(&|| {
        let rule = open_dir(&tree.root);
        answer(tree.cover_dir(), || {
            answer(if restrict(&[rule]) { Ok(()) } else { Err(30) }, || {
                read(&tree.on_tmpfs)
            })
        })
    });
    tree.assert_host_untouched();
    assert_eq!(on_root, Answer::Allowed, "rule on the tmpfs's root");
    assert_eq!(above, Answer::Allowed, "rule above the mount point");
}

#[test]
fn a_rule_on_a_bind_sources_parent_does_not_reach_through_the_bind() {
    if !ready() {
        return;
    }
    let tree = Tree::new();
    let child = Child::new();
    let bound = |rule_on: &CString, path: &CString| {
        child.run(&|| {
            let rule = open_dir(rule_on);
            if !bind(&tree.sub, &tree.bind_point) {
                return 20;
            }
            answer(if restrict(&[rule]) { Ok(()) } else { Err(30) }, || {
                read(path)
            })
        })
    };
    // The rule on `src` grants `src/sub/file` by its own path...
    assert_eq!(bound(&tree.src, &tree.sub_file), Answer::Allowed);
    // ...but not the same file reached through the bind of `src/sub`.
    assert_eq!(
        bound(&tree.src, &tree.through_bind),
        Answer::Denied,
        "a rule on the bind source's parent reached through the bind"
    );
    // A rule on the bound directory itself (the bind's root) does, and so does one on the
    // directory that holds the bind's mount point: the walk leaves the bind there.
    assert_eq!(bound(&tree.sub, &tree.through_bind), Answer::Allowed);
    assert_eq!(bound(&tree.root, &tree.through_bind), Answer::Allowed);
}

/// What a rule made once on the built tree grants in a run's clone of it.
enum TreeRule {
    /// No rule.
    None,
    /// On the tree's bind (whose root is the host's directory).
    OnBind,
    /// On the tree's own root, a directory of the tmpfs built once: the binds' common parent.
    OnTreeRoot,
}

#[test]
fn a_rule_made_on_a_tree_built_once_applies_to_each_clone_of_it() {
    if !ready() {
        return;
    }
    let tree = Tree::new();
    let through_clone = cpath(&tree.root_path.join("bind-point/b/file"));
    let child = Child::new();
    let run = |on: TreeRule| {
        child.run(&|| {
            let built = match raw::bind_tree(&[(&tree.sub, c"b")]) {
                Ok(fd) => fd,
                Err(_) => return 40,
            };
            // The rule is made once, from the built tree...
            let rule = match on {
                TreeRule::None => None,
                // SAFETY: openat on our own descriptor.
                TreeRule::OnBind => Some(unsafe {
                    libc::openat(
                        built,
                        c"b".as_ptr(),
                        libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                    )
                }),
                TreeRule::OnTreeRoot => Some(built),
            };
            // ...and a run attaches its own copy of the whole tree.
            let copy = raw::clone_tree(built, c"", libc::AT_EMPTY_PATH | libc::AT_RECURSIVE);
            if copy < 0 || !raw::attach(copy, libc::AT_FDCWD, &tree.bind_point) {
                return 45;
            }
            let restricted = match rule {
                Some(fd) => restrict(&[fd]),
                None => restrict(&[]),
            };
            answer(if restricted { Ok(()) } else { Err(30) }, || {
                read(&through_clone)
            })
        })
    };
    assert_eq!(run(TreeRule::None), Answer::Denied, "no rule");
    assert_eq!(
        run(TreeRule::OnBind),
        Answer::Allowed,
        "rule on the tree's bind"
    );
    assert_eq!(
        run(TreeRule::OnTreeRoot),
        Answer::Allowed,
        "rule on the tree's own root (the binds' common parent)"
    );
}

/// In a new pid namespace (the case's user namespace owns it), a grandchild mounts a tmpfs on
/// `root`, makes `root/proc` (binding the host's `/proc` there first when `host_proc_under`),
/// pivots into `root`, lets the old root go, and mounts a procfs at `/proc`: `ALLOWED` when
/// the kernel mounts it, `DENIED` when it refuses with `EPERM`, a set-up step's number (40 on)
/// otherwise.
fn proc_in_a_pivoted_root(root: &CString, proc_dir: &CString, host_proc_under: bool) -> i32 {
    let null = std::ptr::null::<libc::c_char>();
    let nothing = std::ptr::null::<libc::c_void>();
    // SAFETY: system calls on strings prepared before the fork; the grandchild leaves with
    // `_exit`.
    unsafe {
        if libc::unshare(libc::CLONE_NEWPID) != 0 {
            return 40;
        }
        let pid = libc::fork();
        if pid < 0 {
            return 41;
        }
        if pid == 0 {
            let code = if !mount_tmpfs(root) {
                42
            } else if libc::mkdir(proc_dir.as_ptr(), 0o755) != 0 {
                43
            } else if host_proc_under
                && libc::mount(
                    c"/proc".as_ptr(),
                    proc_dir.as_ptr(),
                    null,
                    libc::MS_BIND | libc::MS_REC,
                    nothing,
                ) != 0
            {
                44
            } else if libc::chdir(root.as_ptr()) != 0
                || libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) != 0
                || libc::umount2(c".".as_ptr(), libc::MNT_DETACH) != 0
                || libc::chdir(c"/".as_ptr()) != 0
            {
                45
            } else if libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                0,
                nothing,
            ) == 0
            {
                ALLOWED
            } else if *libc::__errno_location() == libc::EPERM {
                DENIED
            } else {
                OTHER_OPEN_ERROR
            };
            libc::_exit(code);
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            46
        }
    }
}

/// A directory to pivot into, and its `proc` mount point (made on the tmpfs mounted there).
fn pivot_root_dir() -> (tempfile::TempDir, CString, CString) {
    let tmp = tempfile::Builder::new()
        .prefix("toolpolicy-proc-fact-")
        .tempdir()
        .expect("temporary directory");
    let root = std::fs::canonicalize(tmp.path()).expect("canonical temporary directory");
    (tmp, cpath(&root), cpath(&root.join("proc")))
}

#[test]
fn a_procfs_is_refused_in_a_user_namespace_where_none_is_fully_visible() {
    if !ready() {
        return;
    }
    let (_tmp, root, proc_dir) = pivot_root_dir();
    let got = Child::new().run(&|| proc_in_a_pivoted_root(&root, &proc_dir, false));
    assert_eq!(
        got,
        Answer::Denied,
        "a procfs was mounted in a user namespace's pivoted root that held no visible procfs"
    );
}

#[test]
fn a_procfs_mounts_in_a_user_namespace_over_the_hosts_bound_beneath_it() {
    if !ready() {
        return;
    }
    let (_tmp, root, proc_dir) = pivot_root_dir();
    let got = Child::new().run(&|| proc_in_a_pivoted_root(&root, &proc_dir, true));
    assert_eq!(got, Answer::Allowed);
}
