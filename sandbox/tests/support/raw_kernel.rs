//! The new mount API and Landlock as bare system calls that allocate nothing, so that a forked
//! child of a multi-threaded test, or the cloned child of a floor measurement, may call them.
//! Used by `tests/landlock_facts.rs` and the spawn bench's floors (included with `#[path]`).
//! The sandbox's own code goes through `sandbox::mounts` and `sandbox::landlock_rules`; these
//! exist to show what the kernel does, piece by piece.

#![allow(dead_code)] // each includer uses part of it

use std::ffi::CStr;
use std::os::fd::RawFd;

/// Landlock's `LANDLOCK_ACCESS_FS_EXECUTE`.
pub const EXECUTE: u64 = 1 << 0;
/// Landlock's `LANDLOCK_ACCESS_FS_READ_FILE`.
pub const READ_FILE: u64 = 1 << 2;
/// Landlock's `LANDLOCK_ACCESS_FS_READ_DIR`.
pub const READ_DIR: u64 = 1 << 3;

/// Every filesystem right of Landlock ABI `abi`: 13 in ABI 1, then REFER (2), TRUNCATE (3) and
/// IOCTL_DEV (5).
pub fn all_fs_rights(abi: i32) -> u64 {
    let bits = match abi {
        ..=1 => 13,
        2 => 14,
        3 | 4 => 15,
        _ => 16,
    };
    (1u64 << bits) - 1
}

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// A new ruleset handling the filesystem rights `handled`, or -1.
pub fn create_ruleset(handled: u64) -> RawFd {
    let attr = RulesetAttr {
        handled_access_fs: handled,
    };
    // SAFETY: landlock_create_ruleset with an attribute of the size it takes.
    unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        ) as RawFd
    }
}

/// Grants `access` beneath the file or directory open at `fd`.
pub fn add_rule(ruleset: RawFd, fd: RawFd, access: u64) -> bool {
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    let rule = PathBeneathAttr {
        allowed_access: access,
        parent_fd: fd,
    };
    // SAFETY: landlock_add_rule with a path-beneath attribute.
    unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            LANDLOCK_RULE_PATH_BENEATH,
            &rule as *const PathBeneathAttr,
            0u32,
        ) == 0
    }
}

/// Sets NO_NEW_PRIVS and enforces `ruleset` on the calling thread.
pub fn restrict_self(ruleset: RawFd) -> bool {
    // SAFETY: prctl and landlock_restrict_self with integers.
    unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) == 0
    }
}

/// `open_tree(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | flags)` of `path` at `at`: a detached copy
/// of the mount there (with `AT_RECURSIVE`, of every mount below it too), or -1.
pub fn clone_tree(at: RawFd, path: &CStr, flags: libc::c_int) -> RawFd {
    const OPEN_TREE_CLONE: libc::c_int = 1;
    // SAFETY: open_tree with a valid string.
    unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            at,
            path.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC | flags,
        ) as RawFd
    }
}

/// Moves the detached tree `tree` onto `name` at `at`.
pub fn attach(tree: RawFd, at: RawFd, name: &CStr) -> bool {
    const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
    // SAFETY: move_mount with valid strings.
    unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            at,
            name.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        ) == 0
    }
}

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// A new detached tmpfs configured with the string `options` (`mode`, `size`), with the mount
/// attributes `attrs` (`MOUNT_ATTR_*`), or -1.
pub fn detached_tmpfs(options: &[(&CStr, &CStr)], attrs: u32) -> RawFd {
    const FSCONFIG_SET_STRING: u32 = 1;
    const FSCONFIG_CMD_CREATE: u32 = 6;
    const CLOEXEC: u32 = 1;
    // SAFETY: the new mount API on a context made and closed here, with C strings.
    unsafe {
        let context = libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), CLOEXEC) as RawFd;
        if context < 0 {
            return -1;
        }
        let null = std::ptr::null::<libc::c_char>();
        let configured = options.iter().all(|(key, value)| {
            let (key, value) = (key.as_ptr(), value.as_ptr());
            libc::syscall(
                libc::SYS_fsconfig,
                context,
                FSCONFIG_SET_STRING,
                key,
                value,
                0,
            ) == 0
        }) && libc::syscall(
            libc::SYS_fsconfig,
            context,
            FSCONFIG_CMD_CREATE,
            null,
            null,
            0,
        ) == 0;
        let fs = if configured {
            libc::syscall(libc::SYS_fsmount, context, CLOEXEC, attrs) as RawFd
        } else {
            -1
        };
        libc::close(context);
        fs
    }
}

/// A detached tmpfs holding, at each name, a bind of its source directory, every mount in it
/// private (no mount made in a copy propagates anywhere): a tree built once, as a prepared view
/// would be. Its descriptor, or the step that failed.
pub fn bind_tree(binds: &[(&CStr, &CStr)]) -> Result<RawFd, &'static str> {
    let tree = detached_tmpfs(&[], 0);
    if tree < 0 {
        return Err("a detached tmpfs");
    }
    // SAFETY: the new mount API on the descriptor made here and valid strings.
    unsafe {
        for &(source, name) in binds {
            if libc::mkdirat(tree, name.as_ptr(), 0o755) != 0 {
                return Err("mkdir in the tree");
            }
            let bind = clone_tree(libc::AT_FDCWD, source, 0);
            let attached = bind >= 0 && attach(bind, tree, name);
            if bind >= 0 {
                libc::close(bind);
            }
            if !attached {
                return Err("bind into the tree");
            }
        }
        let private = MountAttr {
            attr_set: 0,
            attr_clr: 0,
            propagation: libc::MS_PRIVATE,
            userns_fd: 0,
        };
        if libc::syscall(
            libc::SYS_mount_setattr,
            tree,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_RECURSIVE,
            &private as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        ) != 0
        {
            return Err("make the tree private");
        }
        Ok(tree)
    }
}
