//! The two seccomp filters: a deny-list compiled with seccompiler, and a small hand-written
//! guard for what seccompiler cannot say.
//!
//! * **deny-list** (`EPERM`): ptrace, bpf, perf_event_open, the keyring, the old and new mount
//!   API, pivot_root/chroot, kexec, kernel modules, unshare/setns, io_uring, userfaultfd,
//!   process_vm_*, open_by_handle_at, clock and swap changes, `TIOCSTI`/`TIOCLINUX`, and
//!   `clone` with any namespace flag (a deny of `unshare` alone is bypassed by
//!   `clone(CLONE_NEWUSER)`). With `deny_sockets`, `socket()` too; with
//!   `restrict_socket_families`, every family but unix, IPv4, IPv6 and netlink.
//! * **guard**: kills any architecture but x86_64 and any x32 syscall number (seccompiler checks
//!   the architecture, but x32 numbers share it and carry bit 30); answers `clone3` with
//!   `ENOSYS`, because its flags live in memory a filter cannot read and libc then falls back to
//!   `clone`; with `exec_notify`, sends `execve`/`execveat` to the supervisor, which lets the
//!   first one (the tool itself) through and refuses every later one.
//!
//! Both programs are compiled once per plan and travel in the spawn request as packed words.

use std::collections::BTreeMap;

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

/// Options that change the filters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FilterOptions {
    /// Route `execve`/`execveat` to the supervisor (exec = deny).
    pub exec_notify: bool,
    /// Refuse `socket()` (hardened profile with net = deny: no network namespace).
    pub deny_sockets: bool,
    /// Refuse socket families other than unix, IPv4, IPv6 and netlink (net is not allow):
    /// some families, such as `AF_VSOCK` to a hypervisor, ignore network namespaces.
    pub restrict_socket_families: bool,
}

/// Compiled filters, as packed BPF words (`code << 48 | jt << 40 | jf << 32 | k`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Filters {
    /// The deny-list.
    pub deny: Vec<u64>,
    /// The guard.
    pub guard: Vec<u64>,
}

const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_uselib,
    libc::SYS_vhangup,
    libc::SYS_iopl,
    libc::SYS_ioperm,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_lookup_dcookie,
];

const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
    0x80, // CLONE_NEWTIME
];

fn cond(arg: u8, len: SeccompCmpArgLen, op: SeccompCmpOp, value: u64) -> SeccompCondition {
    SeccompCondition::new(arg, len, op, value).expect("static seccomp condition is valid")
}

/// Compiles both filters.
pub fn compile(options: FilterOptions) -> Result<Filters, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &nr in DENIED {
        rules.insert(nr, Vec::new());
    }
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = flag as u64;
            SeccompRule::new(vec![cond(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )])
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    rules.insert(libc::SYS_clone, clone_rules);
    let ioctl_rules = [libc::TIOCSTI, libc::TIOCLINUX]
        .iter()
        .map(|&req| {
            SeccompRule::new(vec![cond(
                1,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                req,
            )])
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    rules.insert(libc::SYS_ioctl, ioctl_rules);
    if options.deny_sockets {
        rules.insert(libc::SYS_socket, Vec::new());
    } else if options.restrict_socket_families {
        let others = [
            libc::AF_UNIX,
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_NETLINK,
        ]
        .iter()
        .map(|&family| cond(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64))
        .collect();
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(others).map_err(|e| e.to_string())?],
        );
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        TargetArch::x86_64,
    )
    .map_err(|e| format!("seccomp deny-list: {e}"))?;
    let program: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| format!("seccomp deny-list: {e}"))?;
    let deny = program
        .iter()
        .map(|i| pack(i.code, i.jt, i.jf, i.k))
        .collect();
    Ok(Filters {
        deny,
        guard: guard(options.exec_notify),
    })
}

fn pack(code: u16, jt: u8, jf: u8, k: u32) -> u64 {
    (code as u64) << 48 | (jt as u64) << 40 | (jf as u64) << 32 | k as u64
}

/// Unpacks words into the kernel's instruction type.
pub fn unpack(words: &[u64]) -> Vec<libc::sock_filter> {
    words
        .iter()
        .map(|w| libc::sock_filter {
            code: (w >> 48) as u16,
            jt: (w >> 40) as u8,
            jf: (w >> 32) as u8,
            k: *w as u32,
        })
        .collect()
}

const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

fn guard(exec_notify: bool) -> Vec<u64> {
    // Targets are the three return instructions at the end; jump offsets are filled in once
    // the program's length is known.
    enum Jump {
        Kill,
        Enosys,
        Notify,
    }
    let mut body: Vec<(u16, u32, Option<Jump>)> = vec![
        (BPF_LD_W_ABS, 4, None), // seccomp_data.arch
    ];
    // arch != x86_64 → kill: encoded below as jeq with jt=0 jf=kill.
    let arch_check = body.len();
    body.push((BPF_JEQ_K, AUDIT_ARCH_X86_64, None));
    body.push((BPF_LD_W_ABS, 0, None)); // seccomp_data.nr
    body.push((BPF_JGE_K, X32_SYSCALL_BIT, Some(Jump::Kill)));
    body.push((BPF_JEQ_K, libc::SYS_clone3 as u32, Some(Jump::Enosys)));
    if exec_notify {
        body.push((BPF_JEQ_K, libc::SYS_execve as u32, Some(Jump::Notify)));
        body.push((BPF_JEQ_K, libc::SYS_execveat as u32, Some(Jump::Notify)));
    }
    let allow = body.len();
    let kill = allow + 1;
    let enosys = allow + 2;
    let notify = allow + 3;
    let mut out = Vec::new();
    for (i, (code, k, jump)) in body.iter().enumerate() {
        let rel = |target: usize| (target - i - 1) as u8;
        let (jt, jf) = if i == arch_check {
            (0, rel(kill))
        } else {
            match jump {
                Some(Jump::Kill) => (rel(kill), 0),
                Some(Jump::Enosys) => (rel(enosys), 0),
                Some(Jump::Notify) => (rel(notify), 0),
                None => (0, 0),
            }
        };
        out.push(pack(*code, jt, jf, *k));
    }
    out.push(pack(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
    out.push(pack(BPF_RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS));
    out.push(pack(
        BPF_RET_K,
        0,
        0,
        libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
    ));
    out.push(pack(BPF_RET_K, 0, 0, libc::SECCOMP_RET_USER_NOTIF));
    out
}

/// Installs an unpacked program ([`unpack`]) on the calling thread; returns the listener fd
/// when `new_listener` is set. Does not allocate.
pub fn install(
    program: &[libc::sock_filter],
    new_listener: bool,
) -> std::io::Result<Option<libc::c_int>> {
    let fprog = libc::sock_fprog {
        len: program.len() as libc::c_ushort,
        filter: program.as_ptr() as *mut libc::sock_filter,
    };
    let flags: libc::c_ulong = if new_listener {
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
    } else {
        0
    };
    // SAFETY: fprog points at `program`, alive for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const libc::sock_fprog,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(new_listener.then_some(rc as libc::c_int))
}

/// Answers one exec notification on `listener`: lets the command's own `execve` (the first one,
/// from `child`) through and refuses every later one (exec = deny). Does not allocate.
pub(crate) fn answer_exec(
    listener: std::os::fd::RawFd,
    child: libc::pid_t,
    first_exec_done: &mut bool,
) {
    // SAFETY: the notification structs are plain data, zeroed as the kernel requires.
    unsafe {
        let mut notif: libc::seccomp_notif = std::mem::zeroed();
        if libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif) != 0 {
            return;
        }
        let mut resp: libc::seccomp_notif_resp = std::mem::zeroed();
        resp.id = notif.id;
        if !*first_exec_done && notif.pid as libc::pid_t == child {
            *first_exec_done = true;
            resp.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32;
        } else {
            resp.error = -libc::EPERM;
        }
        libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_with_and_without_options() {
        let plain = compile(FilterOptions::default()).unwrap();
        let full = compile(FilterOptions {
            exec_notify: true,
            deny_sockets: true,
            restrict_socket_families: true,
        })
        .unwrap();
        assert!(full.deny.len() > plain.deny.len());
        assert_eq!(full.guard.len(), plain.guard.len() + 2);
        // Every jump of the guard lands inside the program.
        for f in [&plain, &full] {
            for (i, ins) in unpack(&f.guard).iter().enumerate() {
                if ins.code & 0x07 != libc::BPF_JMP as u16 {
                    continue;
                }
                assert!(i + 1 + (ins.jt as usize) < f.guard.len());
                assert!(i + 1 + (ins.jf as usize) < f.guard.len());
            }
        }
    }

    /// Forks, optionally installs the deny-list, and reports the errno of `socket(family)`
    /// (0 when it succeeded).
    fn socket_errno_in_child(filter: Option<&Filters>, family: libc::c_int) -> i32 {
        let program = filter.map(|f| unpack(&f.deny));
        // SAFETY: the child only makes syscalls and leaves with _exit.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                if let Some(program) = &program {
                    libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                    if install(program, false).is_err() {
                        libc::_exit(255);
                    }
                }
                let fd = libc::socket(family, libc::SOCK_STREAM, 0);
                let code = if fd >= 0 {
                    0
                } else {
                    *libc::__errno_location()
                };
                libc::_exit(code);
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            libc::WEXITSTATUS(status)
        }
    }

    #[test]
    fn socket_families_that_ignore_network_namespaces_are_refused() {
        let filters = compile(FilterOptions {
            restrict_socket_families: true,
            ..FilterOptions::default()
        })
        .unwrap();
        // Control: without the filter, AF_VSOCK is not refused with EPERM.
        assert_ne!(socket_errno_in_child(None, libc::AF_VSOCK), libc::EPERM);
        assert_eq!(
            socket_errno_in_child(Some(&filters), libc::AF_VSOCK),
            libc::EPERM
        );
        assert_eq!(socket_errno_in_child(Some(&filters), libc::AF_INET), 0);
        assert_eq!(socket_errno_in_child(Some(&filters), libc::AF_UNIX), 0);
    }
}
