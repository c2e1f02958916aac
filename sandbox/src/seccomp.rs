//! The seccomp filter: one program, built once per plan, that travels in the spawn request as
//! packed words.
//!
//! What it does, first match wins:
//! * kills any architecture but x86_64 and any x32 syscall number (x32 shares the x86_64
//!   architecture value and marks its numbers with bit 30);
//! * answers `clone3` with `ENOSYS`, because its flags live in memory a filter cannot read, and
//!   libc then falls back to `clone`;
//! * with `exec_notify`, sends `execve`/`execveat` to the supervisor, which lets the first one
//!   (the tool itself) through and refuses every later one;
//! * refuses with `EPERM`: ptrace, bpf, perf_event_open, the keyring, the old and new mount
//!   API, pivot_root/chroot, kexec, kernel modules, unshare/setns, io_uring, userfaultfd,
//!   process_vm_*, pidfd_getfd, file handles, clock and swap changes, and more ([`DENIED`]);
//! * refuses with `EPERM`, by argument: `clone` with any namespace flag (a deny of `unshare`
//!   alone is bypassed by `clone(CLONE_NEWUSER)`), `ioctl` `TIOCSTI`/`TIOCLINUX`; with
//!   `deny_sockets`, `socket()`; with `restrict_socket_families`, every family but unix, IPv4,
//!   IPv6 and netlink;
//! * with `supervise_unix` (strict, net is not allow): sends `connect` to the supervisor, which
//!   connects on the tool's behalf ([`crate::supervisor`]), and refuses unix datagram sockets
//!   (`socket`/`socketpair` of `AF_UNIX`, `SOCK_DGRAM`), whose `sendmsg` can name any
//!   pathname socket in memory a filter cannot read.
//!
//! **How it is built.** The argument rules are compiled by seccompiler. The checks before them
//! are a short hand-assembled prefix, because seccompiler tests syscall numbers one after the
//! other: for the 50-odd numbers here that made a 344-instruction program whose attach took
//! about 180 µs (the kernel runs the filter for every syscall number to build its allow cache),
//! a tenth of a whole strict spawn. The prefix finds the number by binary search instead (about
//! seven comparisons), and only `clone`, `ioctl` and `socket` reach seccompiler's part. A test
//! runs the program in a small BPF interpreter against the rules above, for every syscall
//! number.

use std::collections::BTreeMap;

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

/// Options that change the filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FilterOptions {
    /// Route `execve`/`execveat` to the supervisor (exec = deny).
    pub exec_notify: bool,
    /// Refuse `socket()` (hardened profile with net = deny: no network namespace).
    pub deny_sockets: bool,
    /// Refuse socket families other than unix, IPv4, IPv6 and netlink (net is not allow):
    /// some families, such as `AF_VSOCK` to a hypervisor, ignore network namespaces.
    pub restrict_socket_families: bool,
    /// Send `connect` to the supervisor and refuse unix datagram sockets (strict with
    /// net = deny or a host list): host pathname sockets inside the roots stay unreachable.
    pub supervise_unix: bool,
}

/// The compiled filter, as packed BPF words (`code << 48 | jt << 40 | jf << 32 | k`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Filters {
    /// The program.
    pub program: Vec<u64>,
}

/// Syscalls refused with `EPERM` whatever their arguments.
pub const DENIED: &[libc::c_long] = &[
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

/// Compiles the filter.
///
/// # Errors
///
/// seccompiler refused the argument rules, or a jump of the prefix does not fit (both would
/// be bugs in this module; the tests compile every combination of options).
pub fn compile(options: FilterOptions) -> Result<Filters, String> {
    let rules = argument_rules(options)?;
    let numbers_with_rules: Vec<u32> = rules.keys().map(|&nr| nr as u32).collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        TargetArch::x86_64,
    )
    .map_err(|e| format!("seccomp argument rules: {e}"))?;
    let by_argument: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| format!("seccomp argument rules: {e}"))?;
    let mut program = prefix(options, &numbers_with_rules)?;
    program.extend(by_argument.iter().map(|i| pack(i.code, i.jt, i.jf, i.k)));
    Ok(Filters { program })
}

/// seccompiler's rules: the syscalls whose verdict depends on their arguments.
fn argument_rules(options: FilterOptions) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
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
    if options.supervise_unix {
        let unix_datagram = || {
            SeccompRule::new(vec![
                cond(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Eq,
                    libc::AF_UNIX as u64,
                ),
                cond(
                    1,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                    libc::SOCK_DGRAM as u64,
                ),
            ])
            .map_err(|e| e.to_string())
        };
        if !options.deny_sockets {
            rules
                .entry(libc::SYS_socket)
                .or_default()
                .push(unix_datagram()?);
        }
        rules.insert(libc::SYS_socketpair, vec![unix_datagram()?]);
    }
    Ok(rules)
}

/// The type bits of `socket()`'s second argument (the rest are `SOCK_NONBLOCK`/`SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;

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
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// Where a jump of the prefix goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The next instruction.
    Next,
    /// A label of the binary search.
    Label(usize),
    /// One of the returns at the end of the prefix.
    Ret(Verdict),
    /// The first instruction after the prefix: seccompiler's part.
    Rest,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Allow,
    Kill,
    Enosys,
    Notify,
    Eperm,
}

const VERDICTS: [(Verdict, u32); 5] = [
    (Verdict::Allow, libc::SECCOMP_RET_ALLOW),
    (Verdict::Kill, libc::SECCOMP_RET_KILL_PROCESS),
    (
        Verdict::Enosys,
        libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
    ),
    (Verdict::Notify, libc::SECCOMP_RET_USER_NOTIF),
    (Verdict::Eperm, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
];

enum Op {
    Load(u32),
    /// `if A == k goto t else goto f` (or `>=` with `ge`).
    Jump {
        ge: bool,
        k: u32,
        t: Target,
        f: Target,
    },
    Always(Target),
    Label(usize),
}

/// The hand-assembled checks before seccompiler's part; ends in their return instructions.
fn prefix(options: FilterOptions, numbers_with_rules: &[u32]) -> Result<Vec<u64>, String> {
    let jeq = |k: u32, t: Target| Op::Jump {
        ge: false,
        k,
        t,
        f: Target::Next,
    };
    let mut ops = vec![
        Op::Load(OFFSET_ARCH),
        Op::Jump {
            ge: false,
            k: AUDIT_ARCH_X86_64,
            t: Target::Next,
            f: Target::Ret(Verdict::Kill),
        },
        Op::Load(OFFSET_NR),
        Op::Jump {
            ge: true,
            k: X32_SYSCALL_BIT,
            t: Target::Ret(Verdict::Kill),
            f: Target::Next,
        },
        jeq(libc::SYS_clone3 as u32, Target::Ret(Verdict::Enosys)),
    ];
    if options.exec_notify {
        ops.push(jeq(libc::SYS_execve as u32, Target::Ret(Verdict::Notify)));
        ops.push(jeq(libc::SYS_execveat as u32, Target::Ret(Verdict::Notify)));
    }
    if options.supervise_unix {
        ops.push(jeq(libc::SYS_connect as u32, Target::Ret(Verdict::Notify)));
    }
    let mut numbers: Vec<(u32, Target)> = DENIED
        .iter()
        .map(|&nr| (nr as u32, Target::Ret(Verdict::Eperm)))
        .chain(numbers_with_rules.iter().map(|&nr| (nr, Target::Rest)))
        .collect();
    numbers.sort_by_key(|&(nr, _)| nr);
    numbers.dedup_by_key(|&mut (nr, _)| nr);
    let mut labels = 0;
    search(&numbers, &mut ops, &mut labels);
    assemble(&ops)
}

/// Emits a binary search for the syscall number (already in A) over `numbers`; a number that
/// is not there is allowed, so only the listed ones pay for more than the search.
fn search(numbers: &[(u32, Target)], ops: &mut Vec<Op>, labels: &mut usize) {
    if numbers.len() <= 3 {
        for &(nr, target) in numbers {
            ops.push(Op::Jump {
                ge: false,
                k: nr,
                t: target,
                f: Target::Next,
            });
        }
        ops.push(Op::Always(Target::Ret(Verdict::Allow)));
        return;
    }
    let (low, high) = numbers.split_at(numbers.len() / 2);
    let label = *labels;
    *labels += 1;
    ops.push(Op::Jump {
        ge: true,
        k: high[0].0,
        t: Target::Label(label),
        f: Target::Next,
    });
    search(low, ops, labels);
    ops.push(Op::Label(label));
    search(high, ops, labels);
}

/// Lays the ops out, then the return instructions, and resolves every jump.
fn assemble(ops: &[Op]) -> Result<Vec<u64>, String> {
    let mut label_at = Vec::new();
    let mut len = 0;
    for op in ops {
        match op {
            Op::Label(id) => {
                if label_at.len() <= *id {
                    label_at.resize(id + 1, 0);
                }
                label_at[*id] = len;
            }
            _ => len += 1,
        }
    }
    let ret_at = |v: Verdict| len + VERDICTS.iter().position(|&(w, _)| w == v).unwrap_or(0);
    let rest = len + VERDICTS.len();
    let mut out = Vec::with_capacity(rest);
    for op in ops {
        let at = out.len();
        let offset = |target: Target| -> usize {
            let to = match target {
                Target::Next => at + 1,
                Target::Label(id) => label_at[id],
                Target::Ret(v) => ret_at(v),
                Target::Rest => rest,
            };
            to - at - 1
        };
        let short = |target: Target| -> Result<u8, String> {
            u8::try_from(offset(target))
                .map_err(|_| format!("seccomp prefix: a jump from instruction {at} is too long"))
        };
        match *op {
            Op::Load(k) => out.push(pack(BPF_LD_W_ABS, 0, 0, k)),
            Op::Jump { ge, k, t, f } => {
                let code = if ge { BPF_JGE_K } else { BPF_JEQ_K };
                out.push(pack(code, short(t)?, short(f)?, k));
            }
            Op::Always(target) => out.push(pack(BPF_JA, 0, 0, offset(target) as u32)),
            Op::Label(_) => {}
        }
    }
    out.extend(VERDICTS.iter().map(|&(_, ret)| pack(BPF_RET_K, 0, 0, ret)));
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn every_option_set() -> Vec<FilterOptions> {
        (0..16)
            .map(|bits| FilterOptions {
                exec_notify: bits & 1 != 0,
                deny_sockets: bits & 2 != 0,
                restrict_socket_families: bits & 4 != 0,
                supervise_unix: bits & 8 != 0,
            })
            .collect()
    }

    #[test]
    fn compiles_every_option_set_with_jumps_inside_the_program() {
        for options in every_option_set() {
            let program = unpack(&compile(options).unwrap().program);
            // seccompiler alone made 344 instructions of the same rules.
            assert!(program.len() < 250, "{} instructions", program.len());
            for (i, ins) in program.iter().enumerate() {
                if ins.code & 0x07 != libc::BPF_JMP as u16 {
                    continue;
                }
                let reach = if ins.code == BPF_JA {
                    ins.k as usize
                } else {
                    ins.jt.max(ins.jf) as usize
                };
                assert!(i + 1 + reach < program.len(), "jump at {i}");
            }
        }
    }

    /// Runs a classic BPF program on a `seccomp_data` (the subset seccomp programs use).
    fn interpret(program: &[libc::sock_filter], data: &[u8; 64]) -> u32 {
        let mut a: u32 = 0;
        let mut pc = 0;
        loop {
            let ins = program[pc];
            let k = ins.k;
            match (ins.code & 0x07) as u32 {
                libc::BPF_LD => {
                    assert_eq!(ins.code, BPF_LD_W_ABS);
                    let at = k as usize;
                    a = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                    pc += 1;
                }
                libc::BPF_ALU => {
                    assert_eq!(ins.code as u32, libc::BPF_ALU | libc::BPF_AND | libc::BPF_K);
                    a &= k;
                    pc += 1;
                }
                libc::BPF_JMP => {
                    let op = (ins.code & 0xf0) as u32;
                    if op == libc::BPF_JA {
                        pc += 1 + k as usize;
                        continue;
                    }
                    assert_eq!(ins.code & 0x08, 0, "jumps compare with k");
                    let taken = match op {
                        libc::BPF_JEQ => a == k,
                        libc::BPF_JGT => a > k,
                        libc::BPF_JGE => a >= k,
                        libc::BPF_JSET => a & k != 0,
                        _ => panic!("unexpected jump {:#x}", ins.code),
                    };
                    pc += 1 + if taken { ins.jt } else { ins.jf } as usize;
                }
                libc::BPF_RET => return k,
                _ => panic!("unexpected instruction {:#x}", ins.code),
            }
        }
    }

    fn seccomp_data(arch: u32, nr: u32, args: [u64; 6]) -> [u8; 64] {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        for (i, arg) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&arg.to_le_bytes());
        }
        data
    }

    /// The module documentation's rules, written out.
    fn expected(options: FilterOptions, arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let is = |n: libc::c_long| nr == n as u32;
        let namespaces = NAMESPACE_FLAGS.iter().fold(0u64, |m, &f| m | f as u64);
        let family = args[0] as u32 as i32;
        let allowed_family = [
            libc::AF_UNIX,
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_NETLINK,
        ]
        .contains(&family);
        if arch != AUDIT_ARCH_X86_64 || nr & X32_SYSCALL_BIT != 0 {
            libc::SECCOMP_RET_KILL_PROCESS
        } else if is(libc::SYS_clone3) {
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32
        } else if (options.exec_notify && (is(libc::SYS_execve) || is(libc::SYS_execveat)))
            || (options.supervise_unix && is(libc::SYS_connect))
        {
            libc::SECCOMP_RET_USER_NOTIF
        } else if DENIED.iter().any(|&n| is(n))
            || (is(libc::SYS_clone) && args[0] & namespaces != 0)
            || (is(libc::SYS_ioctl)
                && [libc::TIOCSTI, libc::TIOCLINUX].contains(&(args[1] as u32 as u64)))
            || (is(libc::SYS_socket)
                && (options.deny_sockets || (options.restrict_socket_families && !allowed_family)))
            || ((is(libc::SYS_socket) || is(libc::SYS_socketpair))
                && options.supervise_unix
                && family == libc::AF_UNIX
                && args[1] as u32 & 0xf == libc::SOCK_DGRAM as u32)
        {
            eperm
        } else {
            libc::SECCOMP_RET_ALLOW
        }
    }

    #[test]
    fn the_program_follows_the_rules_for_every_syscall_number() {
        let mut arg_sets: Vec<[u64; 6]> = vec![[0; 6], [u64::MAX; 6]];
        for &flag in NAMESPACE_FLAGS {
            arg_sets.push([flag as u64 | libc::SIGCHLD as u64, 0, 0, 0, 0, 0]);
        }
        arg_sets.push([(libc::CLONE_VM | libc::CLONE_VFORK) as u64, 0, 0, 0, 0, 0]);
        for request in [
            libc::TIOCSTI,
            libc::TIOCLINUX,
            libc::TIOCGWINSZ,
            libc::FIONREAD,
        ] {
            arg_sets.push([1, request, 0, 0, 0, 0]);
            arg_sets.push([1, request | 0xffff_ffff_0000_0000, 0, 0, 0, 0]);
        }
        for family in 0..=46u64 {
            arg_sets.push([family, libc::SOCK_STREAM as u64, 0, 0, 0, 0]);
        }
        for kind in [libc::SOCK_DGRAM, libc::SOCK_SEQPACKET, libc::SOCK_RAW] {
            for flags in [0, libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK] {
                let kind = (kind | flags) as u64;
                arg_sets.push([libc::AF_UNIX as u64, kind, 0, 0, 0, 0]);
                arg_sets.push([libc::AF_UNIX as u64 | 1 << 32, kind | 1 << 40, 0, 0, 0, 0]);
                arg_sets.push([libc::AF_INET as u64, kind, 0, 0, 0, 0]);
            }
        }
        let numbers: Vec<u32> = (0..=470)
            .chain([1000, 0x4000_0000, 0x4000_0001, 0x4000_0000 + 59, u32::MAX])
            .collect();
        let mut checked = 0;
        for options in every_option_set() {
            let program = unpack(&compile(options).unwrap().program);
            for arch in [AUDIT_ARCH_X86_64, 0x4000_0003] {
                for &nr in &numbers {
                    for &args in &arg_sets {
                        let got = interpret(&program, &seccomp_data(arch, nr, args));
                        let want = expected(options, arch, nr, args);
                        assert_eq!(
                            got, want,
                            "nr {nr} arch {arch:#x} args {args:x?} options {options:?}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 400_000, "{checked}");
    }

    /// Forks, optionally installs the filter, and reports the errno of `socket(family)`
    /// (0 when it succeeded).
    fn socket_errno_in_child(filter: Option<&Filters>, family: libc::c_int) -> i32 {
        let program = filter.map(|f| unpack(&f.program));
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
