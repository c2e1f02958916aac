//! A kernel without `openat2`: a seccomp filter on one thread answers `ENOSYS` for it, as a
//! kernel before 5.6 would. The refusal still holds (the portable backend takes over), and the
//! answer is remembered for the process. Its own test binary: the memory is process-wide.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::io;
use std::os::unix::fs::symlink;

use policy_runtime::beneath::uses_openat2;
use policy_runtime::policy::ToolPolicy;
use policy_runtime::ReadPath;

/// Makes `openat2` fail with `ENOSYS` on the calling thread (and nothing else).
fn deny_openat2_on_this_thread() -> io::Result<()> {
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    let ld = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    let jeq = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    let insn = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let mut filter = [
        insn(ld, 0, 0, 4), // arch
        insn(jeq, 0, 3, AUDIT_ARCH_X86_64),
        insn(ld, 0, 0, 0), // syscall number
        insn(jeq, 0, 1, libc::SYS_openat2 as u32),
        insn(ret, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        insn(ret, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: plain prctl calls; `prog` points at `filter`, both alive for the call.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog,
            ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[test]
fn without_openat2_the_portable_backend_refuses_the_same_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("data")).unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("secret/key.txt"), "SECRET").unwrap();
    std::fs::write(root.join("data/file.txt"), "inside").unwrap();
    symlink("../secret", root.join("data/link")).unwrap();
    let policy = ToolPolicy::from_json_str(
        "t",
        &format!(r#"{{"fs": {{"read": ["{}/data/**"]}}}}"#, root.display()),
    )
    .unwrap();
    let escape =
        ReadPath::admit(&format!("{}/data/link/key.txt", root.display()), &policy).unwrap();
    let inside = ReadPath::admit(&format!("{}/data/file.txt", root.display()), &policy).unwrap();
    assert!(uses_openat2(), "this kernel has openat2");

    std::thread::spawn(move || {
        deny_openat2_on_this_thread().expect("seccomp filter");
        let err = escape.read().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        assert!(!uses_openat2(), "ENOSYS is remembered");
        assert_eq!(inside.read_to_string().unwrap(), "inside");
        assert_eq!(
            escape.read().unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
    })
    .join()
    .unwrap();
    // Remembered for the whole process, not only the filtered thread.
    assert!(!uses_openat2());
}
