//! What this kernel offers, detected by trying it, and the skip-or-fail rule for what it lacks.
//! Shared by every sandbox test binary (included with `#[path]`).

#![allow(dead_code)] // each includer uses part of it

use std::sync::OnceLock;

/// Reports a missing host feature: prints the reason and lets the test return early, except
/// under `TOOLPOLICY_REQUIRE_KERNEL=1`, where the test fails.
pub fn missing(reason: &str) {
    if std::env::var("TOOLPOLICY_REQUIRE_KERNEL").as_deref() == Ok("1") {
        panic!("TOOLPOLICY_REQUIRE_KERNEL=1 but this host lacks a feature: {reason}");
    }
    eprintln!("skipped: {reason}");
}

/// The Landlock ABI version, or 0 when Landlock is unavailable.
pub fn landlock_abi() -> i64 {
    static ABI: OnceLock<i64> = OnceLock::new();
    *ABI.get_or_init(|| {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_long = 1;
        // SAFETY: the version query takes a null attribute pointer and size 0.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        abi.max(0)
    })
}

/// Whether a process of this host may create a user namespace (tried in a throwaway child).
pub fn user_namespaces() -> bool {
    static USERNS: OnceLock<bool> = OnceLock::new();
    *USERNS.get_or_init(|| {
        // SAFETY: the child only calls unshare and _exit, both async-signal-safe.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                let ok = libc::unshare(libc::CLONE_NEWUSER) == 0;
                libc::_exit(if ok { 0 } else { 1 });
            }
            if pid < 0 {
                return false;
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
        }
    })
}

/// Whether `::1` can be bound (IPv6 enabled on loopback).
pub fn ipv6_loopback() -> bool {
    std::net::TcpListener::bind("[::1]:0").is_ok()
}

/// Whether this host can run `profile` (Landlock at the ABI the sandbox needs, and for the
/// strict profile the namespaces); prints why not, as [`missing`] does.
pub fn supports(profile: sandbox::Profile) -> bool {
    use sandbox::hostcaps::HostSupport;
    let host = HostSupport::detect();
    let mut lacks = Vec::new();
    if host.landlock_abi < sandbox::plan::FULL_LANDLOCK_ABI {
        lacks.push(format!("Landlock ABI {}", host.landlock_abi));
    }
    if profile == sandbox::Profile::Strict {
        if let Err(e) = HostSupport::probe_namespaces() {
            lacks.push(e);
        }
    }
    if lacks.is_empty() {
        return true;
    }
    missing(&format!("kernel lacks {}", lacks.join(", ")));
    false
}

/// The kernel's release as (major, minor), from `uname`; (0, 0) when it cannot be read.
pub fn release() -> (u32, u32) {
    // SAFETY: an all-zero utsname is valid; uname fills it.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::uname(&mut uts) } != 0 {
        return (0, 0);
    }
    // SAFETY: uname leaves a NUL-terminated string.
    let text = unsafe { std::ffi::CStr::from_ptr(uts.release.as_ptr()) }.to_string_lossy();
    let mut parts = text
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}
