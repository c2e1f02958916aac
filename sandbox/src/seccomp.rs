//! The seccomp filter: one program, built once per plan, that travels in the spawn request as
//! packed words.
//!
//! What it does, first match wins:
//! * kills any architecture but x86_64 and any x32 syscall number (x32 shares the x86_64
//!   architecture value and marks its numbers with bit 30);
//! * answers `clone3` and `openat2` with `ENOSYS`, because their flags (and `openat2`'s mode)
//!   live in memory a filter cannot read; libc then falls back to `clone` and `openat`, whose
//!   arguments it can;
//! * with `exec_notify`, sends `execve`/`execveat` to the supervisor, which lets the first one
//!   (the tool itself) through and refuses every later one;
//! * with `deny_memfd`, answers `memfd_create` and `memfd_secret` with `ENOSYS` (see below);
//! * refuses with `EPERM`: ptrace, bpf, perf_event_open, the keyring, the old and new mount
//!   API, pivot_root/chroot, kexec, kernel modules, unshare/setns, io_uring, userfaultfd,
//!   process_vm_*, pidfd_getfd, file handles, clock and swap changes, and more ([`DENIED`]);
//!   with `shares_host_namespaces`, the SysV IPC and POSIX message-queue calls ([`SYSV_IPC`],
//!   [`POSIX_MQUEUE`]); with `keep_process_group` (the hardened command), `setsid`, and
//!   `setpgid` without the tail's secret ([`GROUP_CHANGES`], in the tail, see [`Filters`]); with
//!   `deny_metadata_writes`, every change of a file's mode, owner, timestamps or extended
//!   attributes ([`METADATA_WRITES`]);
//! * refuses with `EPERM`, by argument: `clone` with any namespace flag (a deny of `unshare`
//!   alone is bypassed by `clone(CLONE_NEWUSER)`), `ioctl` `TIOCSTI`/`TIOCLINUX`; a set-user-ID
//!   or set-group-ID bit in the mode of the chmod family, of `mknod`/`mknodat`, `creat`, and of
//!   `open`/`openat` with `O_CREAT` or `O_TMPFILE` ([`MODE_ARGUMENTS`]); with `deny_sockets`,
//!   `socket()` (and `socketpair()` of unix datagram sockets, see below); with
//!   `restrict_socket_families`, every family but unix, IPv4, IPv6 and
//!   netlink; with `shares_host_namespaces`, `prlimit64`, `sched_setparam`,
//!   `sched_setscheduler`, `sched_setattr` and `sched_setaffinity` on any pid but 0 (the
//!   caller), and `setpriority`/`ioprio_set` on anything but the caller ([`OWN_PROCESS_ONLY`]); with
//!   `deny_metadata_writes`, the inode-flag ioctls (`chattr`).
//! * with `supervise_unix` (strict, net is not allow): sends `connect` to the supervisor, which
//!   connects on the tool's behalf (`crate::supervisor`), and refuses unix datagram sockets
//!   (`socket`/`socketpair` of `AF_UNIX`, `SOCK_DGRAM`, or `SOCK_RAW`, which the kernel turns
//!   into `SOCK_DGRAM`), whose `sendmsg` can name any
//!   pathname socket in memory a filter cannot read.
//!
//! **No set-user-ID files.** In the strict profile the tool's uid is the runner's on the host,
//! so a file it creates in a write root belongs to the runner; when the runner is root, a
//! `chmod 4755` by the file's owner (no capability needed) would leave a root shell for any
//! local user after the run. The mode filters above stop every way to put the bits there: the
//! chmod family and every call that creates a file with a mode. They are argument filters, not
//! an id mapping, so they hold in both profiles, for root and non-root runners alike, and cost
//! nothing per call. What they cannot see is closed around them: `openat2` (its mode is in a
//! struct) falls back to `openat`, io_uring is refused, and a write to an existing set-user-ID
//! file clears the bit because the tool holds no `CAP_FSETID`. Directories in a set-group-ID
//! write root still inherit that bit from the host's directory (`mkdir` takes no such bit from
//! its mode), which grants nothing: a directory is not executed. File capabilities
//! (`security.capability`) need `CAP_SETFCAP`, which the tool never holds (inner uid 1000 in
//! strict, an emptied bounding set in hardened); the xattr name is a pointer a filter cannot
//! read, so the capability drop is the mechanism, and the tests hold it.
//!
//! **Anonymous executables.** Under an exec allow-list, a memfd holding a copied program could
//! be run with `fexecve` or through the allowed dynamic loader (`ld.so /proc/self/fd/N`):
//! the memfd lives on the kernel's internal mount, which Landlock treats as outside every
//! hierarchy and which no `noexec` reaches. `MFD_NOEXEC_SEAL` (or `vm.memfd_noexec = 2`, which
//! the sandbox's child cannot even write unless the runner is root) stops `fexecve` but not the
//! loader, which maps the file with `mmap(PROT_EXEC)`; so `memfd_create` is answered `ENOSYS`,
//! the answer of kernels without memfds, to which libraries fall back with a file in `/tmp`
//! (noexec under an exec list).
//!
//! **Hardened metadata writes.** Landlock up to ABI 7 governs no `chmod`, `chown`, `utimes` or
//! `setxattr`, and without a mount namespace every host path is reachable by name; without
//! declared write roots they are all refused, and with write roots they stay open and the plan
//! reports `fs.write` as widened (see [`crate::plan`]).
//!
//! **How it is built.** The two-argument socket rules are compiled by seccompiler. Everything
//! before them is a hand-assembled prefix, because the kernel's attach time grows with the
//! program (it translates and compiles the whole program, and runs it for every syscall number
//! to build its allow cache), and seccompiler's layout is long: it tests syscall numbers one
//! after the other (for the 50-odd numbers here a 344-instruction program whose attach took
//! about 180 µs, a tenth of a whole strict spawn), spends about twenty instructions on each
//! one-argument check and nine on each namespace flag of `clone`. The prefix finds the number
//! by a binary search over segments of the number line instead (a run of consecutive numbers
//! with one verdict is one segment; about seven comparisons, one instruction per segment
//! boundary), and its one-argument checks (set-id modes, `clone`'s namespace flags in one
//! `JSET`, `ioctl` requests, `prlimit64`'s pid) are blocks of two to six instructions. The
//! strict program went from 280 instructions to 155 that way, which took 15–40 µs off each
//! attach in `fork` + attach loops (the compile shrank; the allow-cache pass did not, its
//! cost follows the search's depth). Only `socket` and `socketpair` reach seccompiler's part. A test runs the program in
//! a small BPF interpreter against the rules above, for every syscall number.

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
    /// Answer `memfd_create` and `memfd_secret` with `ENOSYS` (exec = allow-list): a memfd
    /// lives on the kernel's internal mount, which neither Landlock nor `noexec` covers.
    pub deny_memfd: bool,
    /// The process shares the host's pid and IPC namespaces (hardened): refuse the SysV IPC
    /// calls and `prlimit64` on any pid but 0.
    pub shares_host_namespaces: bool,
    /// Refuse every change of a file's mode, owner, timestamps, extended attributes and inode
    /// flags (hardened without declared write roots): Landlock up to ABI 7 does not govern them.
    pub deny_metadata_writes: bool,
    /// Send `connect` to the supervisor and refuse unix datagram sockets (strict with
    /// net = deny or a host list): host pathname sockets inside the roots stay unreachable.
    pub supervise_unix: bool,
    /// Refuse `setpgid` and `setsid` ([`GROUP_CHANGES`]; the hardened command, whose process
    /// group is how the zygote finds everything it left). Not for `confine_self`: the agent
    /// and the zygote it starts must still place each command in a group of its own.
    pub keep_process_group: bool,
    /// With `exec_notify` and `keep_process_group` (the hardened command, exec = deny): the
    /// `execve` calls after the command's own go to the supervisor, which admits its
    /// interpreter chain's relays (`#!/usr/bin/env python3`). Without it the tail refuses them
    /// itself and the run needs no listener ([`Filters::tail`]).
    pub relay_execs: bool,
}

/// The compiled filter, as packed BPF words (`code << 48 | jt << 40 | jf << 32 | k`).
///
/// With `keep_process_group` (the hardened command) the verdicts come in two programs,
/// installed in this order: `program`, the same for every run of a policy, and `tail`, a few
/// instructions: `setsid` refused, `setpgid` admitted only with the secret below, and with
/// `exec_notify` the rule of exec = deny. The zygote of that program installs both on itself
/// at its start, and every command it forks inherits them ([`crate::zygote`]); where the
/// tail needs a listener (one per run: an interpreter chain's relays, `relay_execs`),
/// the zygote holds the program only and each command installs the tail itself, once it has
/// made its process group. The kernel runs both and keeps the stronger verdict (kill, then
/// errno, then notify, then allow), so the pair decides every call as one program with all
/// the options would (a unit test runs both for every syscall number). Otherwise `tail` is
/// empty.
///
/// **The command's own `execve` without a notification.** exec = deny admits exactly one
/// `execve`, the command's, which the strict profile's supervisor lets through when its
/// notification arrives: two wake-ups per run. The tail instead admits an `execve` whose three
/// unused argument registers (`r10`, `r8`, `r9`: `execve` takes three arguments, and the
/// kernel shows seccomp all six) hold a secret of 192 random bits ([`seal`]), drawn once by
/// the zygote that holds the tail, or by the command's process for its run where it installs
/// the tail itself. The command's process passes it to its own `setpgid` and `execve`, and
/// nothing the command can reach knows it: the program is not readable without
/// `CAP_SYS_ADMIN`, the zygote's memory is out of the command's reach (ptrace,
/// `process_vm_readv` and `pidfd_getfd` refused, Landlock's ptrace scope), and the kernel
/// clears those registers for the new program. Every other `execve` or `execveat` is refused,
/// or sent to the supervisor with `relay_execs`, and every other `setpgid` is refused. A
/// zygote's secret serves all its runs: a command that learned it could use it in later runs
/// of that zygote, where a run's own would have died with the run; drawing it per run cost a
/// filter's load per run (`sandbox/PERFORMANCE.md`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Filters {
    /// The program (with `exec_notify` and no tail, the one that notifies).
    pub program: Vec<u64>,
    /// The per-command part of a split filter, or empty.
    #[serde(default)]
    pub tail: Vec<u64>,
}

/// Syscalls refused with `EPERM` whatever their arguments.
pub const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    // A user namespace's keyrings outlive the run that fills them, and a strict run's user
    // namespace serves the next runs of its view (`mounts::lent_user`): with these let through,
    // a key one run added was found by the next (`tests/view_template.rs`).
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

/// The SysV IPC calls, refused when the process shares the host's IPC namespace: a key
/// other than `IPC_PRIVATE` reaches host objects, and so does an id guessed for `shmat` or
/// `msgsnd` without any key.
pub const SYSV_IPC: &[libc::c_long] = &[
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_shmdt,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semctl,
    libc::SYS_semtimedop,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
];

/// The POSIX message-queue calls, refused with [`SYSV_IPC`]: their names live in the IPC
/// namespace's own mount, which no Landlock rule covers.
pub const POSIX_MQUEUE: &[libc::c_long] = &[
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_timedreceive,
    libc::SYS_mq_notify,
    libc::SYS_mq_getsetattr,
];

/// The calls that move a process to another process group or session, refused with
/// `keep_process_group` (the hardened command, which has no pid namespace): `setsid` always,
/// `setpgid` unless it carries the tail's secret, as the command's process's own does when it
/// makes the command's group ([`Filters`]). The zygote starts the command as the leader of a
/// process group of its own and ends a run by killing that group ([`crate::zygote`]): a
/// descendant that could leave it (a daemon's `setsid`, or `setpgid` into another group of
/// the session) would outlive the run. The command still shares the agent's session, so its
/// controlling terminal stays what it was.
pub const GROUP_CHANGES: &[libc::c_long] = &[libc::SYS_setpgid, libc::SYS_setsid];

/// `setxattrat(2)` and `removexattrat(2)` (Linux 6.13), not yet in the libc crate.
const SYS_SETXATTRAT: libc::c_long = 463;
const SYS_REMOVEXATTRAT: libc::c_long = 466;

/// The calls that change a file's mode, owner, timestamps or extended attributes, by path or
/// by descriptor (a descriptor opened read-only is enough for them).
pub const METADATA_WRITES: &[libc::c_long] = &[
    libc::SYS_chmod,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_fchmodat2,
    libc::SYS_chown,
    libc::SYS_fchown,
    libc::SYS_lchown,
    libc::SYS_fchownat,
    libc::SYS_utime,
    libc::SYS_utimes,
    libc::SYS_futimesat,
    libc::SYS_utimensat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    SYS_SETXATTRAT,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    SYS_REMOVEXATTRAT,
];

/// The inode-flag ioctls (`chattr`, fs-verity), refused with [`METADATA_WRITES`].
const INODE_FLAG_IOCTLS: &[u32] = &[
    0x4008_6602, // FS_IOC_SETFLAGS
    0x4004_6602, // FS_IOC32_SETFLAGS
    0x401c_5820, // FS_IOC_FSSETXATTR
    0x4080_6685, // FS_IOC_ENABLE_VERITY: makes a file the uid owns read-only for good
];

/// Where a syscall takes a file mode: `(number, mode argument, flags argument)`. With a flags
/// argument the mode counts only when the flags create a file (`O_CREAT` or `O_TMPFILE`).
pub const MODE_ARGUMENTS: &[(libc::c_long, u8, Option<u8>)] = &[
    (libc::SYS_chmod, 1, None),
    (libc::SYS_fchmod, 1, None),
    (libc::SYS_fchmodat, 2, None),
    (libc::SYS_fchmodat2, 2, None),
    (libc::SYS_creat, 1, None),
    (libc::SYS_mknod, 1, None),
    (libc::SYS_mknodat, 2, None),
    (libc::SYS_open, 2, Some(1)),
    (libc::SYS_openat, 3, Some(2)),
];

/// The open flags that create a file: `O_CREAT`, and `O_TMPFILE`'s own bit (`O_TMPFILE` also
/// carries `O_DIRECTORY`).
const CREATING_FLAGS: [u64; 2] = [
    libc::O_CREAT as u64,
    (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64,
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
    if options.keep_process_group {
        let shared = FilterOptions {
            keep_process_group: false,
            exec_notify: false,
            ..options
        };
        return Ok(Filters {
            program: whole(shared)?,
            tail: tail(options.exec_notify, options.relay_execs)?,
        });
    }
    Ok(Filters {
        program: whole(options)?,
        tail: Vec::new(),
    })
}

/// Where the secret's six 32-bit halves lie in `struct seccomp_data`: the low and high words
/// of arguments 3, 4 and 5.
const SECRET_OFFSETS: [u32; 6] = [40, 44, 48, 52, 56, 60];

/// Writes `secret` into an unpacked tail's six `xor`s ([`Filters::tail`]); `false` when the
/// tail does not have exactly those six, each right after the load of its half, which the
/// caller must treat as a refusal (an unsealed tail would admit a `setpgid` or an `execve`
/// with those registers zero).
pub fn seal(tail: &mut [libc::sock_filter], secret: &[u32; 6]) -> bool {
    let mut sealed = [false; 6];
    for i in 0..tail.len().saturating_sub(1) {
        let load = tail[i];
        let Some(half) = SECRET_OFFSETS.iter().position(|&o| o == load.k) else {
            continue;
        };
        if load.code != BPF_LD_W_ABS || tail[i + 1].code != BPF_XOR_K || sealed[half] {
            return false;
        }
        tail[i + 1].k = secret[half];
        sealed[half] = true;
    }
    sealed.iter().all(|&s| s)
}

/// A secret for [`seal`], drawn from the kernel's random source; allocates nothing (the
/// command's process draws it after its rlimits are set).
///
/// ```
/// let secret = sandbox::seccomp::draw_secret().unwrap();
/// assert_ne!(secret, sandbox::seccomp::draw_secret().unwrap());
/// ```
pub fn draw_secret() -> std::io::Result<[u32; 6]> {
    let mut bytes = [0u8; 24];
    // SAFETY: getrandom fills the local buffer.
    let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if got != bytes.len() as isize {
        return Err(std::io::Error::last_os_error());
    }
    let mut words = [0u32; 6];
    for (w, b) in words.iter_mut().zip(bytes.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    Ok(words)
}

/// The values of `execve`'s unused argument registers 3, 4 and 5 (`r10`, `r8`, `r9`) that a
/// tail sealed with `secret` admits: each holds two halves, low word first, where the tail
/// loads them (`SECRET_OFFSETS`).
///
/// ```
/// let registers = sandbox::seccomp::secret_registers(&[1, 2, 3, 4, 5, 6]);
/// assert_eq!(registers, [2 << 32 | 1, 4 << 32 | 3, 6 << 32 | 5]);
/// ```
pub fn secret_registers(secret: &[u32; 6]) -> [u64; 3] {
    [0, 2, 4].map(|i| (secret[i + 1] as u64) << 32 | secret[i] as u64)
}

/// `execve(program, argv, envp)` with [`secret_registers`] in its unused argument registers,
/// which a tail sealed with that secret lets through; returns only when `execve` fails (its
/// error in `errno`). Allocates nothing.
///
/// # Safety
/// As `execve`: `program` is a NUL-terminated path, `argv` and `envp` are arrays of
/// NUL-terminated strings that end in a null pointer.
///
/// ```no_run
/// # let secret = [0u32; 6];
/// let argv = [c"/bin/true".as_ptr(), std::ptr::null()];
/// let envp = [std::ptr::null()];
/// let registers = sandbox::seccomp::secret_registers(&secret);
/// // SAFETY: a path and two null-terminated arrays.
/// unsafe { sandbox::seccomp::execve_sealed(argv[0], argv.as_ptr(), envp.as_ptr(), registers) };
/// ```
pub unsafe fn execve_sealed(
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    [r10, r8, r9]: [u64; 3],
) -> libc::c_long {
    // SAFETY: the caller's pointers, as `execve` takes them; the registers are plain values.
    unsafe { libc::syscall(libc::SYS_execve, program, argv, envp, r10, r8, r9) }
}

/// `setpgid(0, 0)`, making the caller the leader of a process group of its own, with
/// [`secret_registers`] in its unused argument registers, which a tail sealed with that
/// secret lets through; 0, or -1 with `errno`.
///
/// ```
/// let registers = sandbox::seccomp::secret_registers(&sandbox::seccomp::draw_secret().unwrap());
/// // SAFETY: the child makes system calls only, then _exit.
/// let child = unsafe { libc::fork() };
/// if child == 0 {
///     // Unfiltered, the registers change nothing: the child leads a group of its own.
///     let led = sandbox::seccomp::setpgid_sealed(registers) == 0
///         && unsafe { libc::getpgid(0) == libc::getpid() };
///     unsafe { libc::_exit(if led { 0 } else { 1 }) };
/// }
/// let mut status = 0;
/// unsafe { libc::waitpid(child, &mut status, 0) };
/// assert_eq!(status, 0);
/// ```
pub fn setpgid_sealed([r10, r8, r9]: [u64; 3]) -> libc::c_long {
    // SAFETY: setpgid takes two integers; the registers are plain values.
    unsafe { libc::syscall(libc::SYS_setpgid, 0, 0, 0, r10, r8, r9) }
}

/// The per-command part of the hardened filter ([`Filters::tail`]). The shared part already
/// kills other architectures and x32 numbers; the tail checks them again so that it never
/// depends on the order of the two.
///
/// `setsid` is refused. `setpgid` passes only with the secret, so that the process that
/// starts the command under a tail it inherited can still make the command's process group;
/// under `exec_notify` so does the command's own `execve`, and every other `execve` or
/// `execveat` gets `later`. Both go through one secret check, whose refusal tells the two
/// apart by number again.
fn tail(exec_notify: bool, relay_execs: bool) -> Result<Vec<u64>, String> {
    const CHECK: usize = 0;
    let jeq = |nr: libc::c_long, t: Target| Op::Jump {
        cmp: Cmp::Eq,
        k: nr as u32,
        t,
        f: Target::Next,
    };
    let later = if exec_notify && relay_execs {
        Verdict::Notify
    } else {
        Verdict::Eperm
    };
    let mut ops = native_numbers_only();
    ops.push(jeq(libc::SYS_setsid, Target::Ret(Verdict::Eperm)));
    ops.push(jeq(libc::SYS_setpgid, Target::Label(CHECK)));
    if exec_notify {
        ops.push(jeq(libc::SYS_execveat, Target::Ret(later)));
        ops.push(jeq(libc::SYS_execve, Target::Label(CHECK)));
    }
    ops.push(Op::Always(Target::Ret(Verdict::Allow)));
    ops.push(Op::Label(CHECK));
    // The six halves are compared in constant time: each is XORed with its half of the secret
    // (placeholders until the process that installs the tail seals its copy, [`seal`]) and the
    // differences ORed together through X, and one jump tests the whole. Six jumps, one per
    // half, would refuse a guess sooner the fewer halves it got right, and so time each half's
    // guess apart.
    for (i, offset) in SECRET_OFFSETS.into_iter().enumerate() {
        ops.push(Op::Load(offset));
        ops.push(Op::Xor(0));
        if i > 0 {
            ops.push(Op::OrX);
        }
        ops.push(Op::Tax);
    }
    ops.push(Op::Jump {
        cmp: Cmp::Eq,
        k: 0,
        t: Target::Ret(Verdict::Allow),
        f: Target::Next,
    });
    // Refused: EPERM, or for an `execve` with relays, the supervisor.
    if later == Verdict::Eperm {
        ops.push(Op::Always(Target::Ret(Verdict::Eperm)));
    } else {
        ops.push(Op::Load(OFFSET_NR));
        ops.push(jeq(libc::SYS_setpgid, Target::Ret(Verdict::Eperm)));
        ops.push(Op::Always(Target::Ret(later)));
    }
    assemble(&ops)
}

/// One program for all of `options`.
fn whole(options: FilterOptions) -> Result<Vec<u64>, String> {
    let mut rules = argument_rules(options)?;
    // A syscall refused whatever its arguments needs no argument rule.
    for nr in denied(options) {
        rules.remove(&nr);
    }
    let numbers_with_rules: Vec<u32> = rules.keys().map(|&nr| nr as u32).collect();
    let mut program = prefix(options, &numbers_with_rules)?;
    if rules.is_empty() {
        // Nothing left for seccompiler: the prefix decides every call.
        return Ok(program);
    }
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
    program.extend(by_argument.iter().map(|i| pack(i.code, i.jt, i.jf, i.k)));
    Ok(program)
}

/// seccompiler's rules: the syscalls whose verdict depends on their arguments.
fn argument_rules(options: FilterOptions) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
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
    // With `socket()` refused (hardened, net = deny), a datagram socketpair is still a unix
    // datagram socket whose `sendto` names any host socket: refused the same way.
    if options.supervise_unix || options.deny_sockets {
        // The kernel makes an AF_UNIX SOCK_RAW (3) socket a datagram one (2): the type
        // without its lowest bit is SOCK_DGRAM for both, so one comparison holds both.
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
                    SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK & !1),
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

/// The syscalls refused with `EPERM` whatever their arguments, for these options (never
/// `keep_process_group`'s: [`compile`] puts those in the tail, [`GROUP_CHANGES`]).
fn denied(options: FilterOptions) -> Vec<libc::c_long> {
    let mut out = DENIED.to_vec();
    if options.shares_host_namespaces {
        out.extend_from_slice(SYSV_IPC);
        out.extend_from_slice(POSIX_MQUEUE);
    }
    if options.deny_metadata_writes {
        out.extend_from_slice(METADATA_WRITES);
    }
    out
}

/// The syscalls answered with `ENOSYS`, for these options: the caller's libc falls back.
fn not_implemented(options: FilterOptions) -> Vec<libc::c_long> {
    let mut out = vec![libc::SYS_clone3, libc::SYS_openat2];
    if options.deny_memfd {
        out.extend([libc::SYS_memfd_create, libc::SYS_memfd_secret]);
    }
    out
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
const BPF_JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const BPF_JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const BPF_XOR_K: u16 = (libc::BPF_ALU | libc::BPF_XOR | libc::BPF_K) as u16;
const BPF_OR_X: u16 = (libc::BPF_ALU | libc::BPF_OR | libc::BPF_X) as u16;
const BPF_TAX: u16 = (libc::BPF_MISC | libc::BPF_TAX) as u16;

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

/// How a jump compares the accumulator with `k`.
#[derive(Clone, Copy)]
enum Cmp {
    /// `A == k`.
    Eq,
    /// `A >= k`.
    Ge,
    /// `A & k != 0`.
    Set,
}

enum Op {
    Load(u32),
    /// `if A <cmp> k goto t else goto f`.
    Jump {
        cmp: Cmp,
        k: u32,
        t: Target,
        f: Target,
    },
    Always(Target),
    /// `A ^= k`.
    Xor(u32),
    /// `A |= X`.
    OrX,
    /// `X = A`.
    Tax,
    Label(usize),
}

/// Kills any architecture but x86_64 and any x32 number, and leaves the number in the
/// accumulator: how both programs start.
fn native_numbers_only() -> Vec<Op> {
    vec![
        Op::Load(OFFSET_ARCH),
        Op::Jump {
            cmp: Cmp::Eq,
            k: AUDIT_ARCH_X86_64,
            t: Target::Next,
            f: Target::Ret(Verdict::Kill),
        },
        Op::Load(OFFSET_NR),
        Op::Jump {
            cmp: Cmp::Ge,
            k: X32_SYSCALL_BIT,
            t: Target::Ret(Verdict::Kill),
            f: Target::Next,
        },
    ]
}

/// The hand-assembled checks before seccompiler's part; ends in their return instructions.
fn prefix(options: FilterOptions, numbers_with_rules: &[u32]) -> Result<Vec<u64>, String> {
    let jeq = |k: u32, t: Target| Op::Jump {
        cmp: Cmp::Eq,
        k,
        t,
        f: Target::Next,
    };
    let mut ops = native_numbers_only();
    if options.exec_notify {
        ops.push(jeq(libc::SYS_execve as u32, Target::Ret(Verdict::Notify)));
        ops.push(jeq(libc::SYS_execveat as u32, Target::Ret(Verdict::Notify)));
    }
    if options.supervise_unix {
        ops.push(jeq(libc::SYS_connect as u32, Target::Ret(Verdict::Notify)));
    }
    let mut numbers: Vec<(u32, Target)> = not_implemented(options)
        .iter()
        .map(|&nr| (nr as u32, Target::Ret(Verdict::Enosys)))
        .chain(
            denied(options)
                .iter()
                .map(|&nr| (nr as u32, Target::Ret(Verdict::Eperm))),
        )
        .chain(numbers_with_rules.iter().map(|&nr| (nr, Target::Rest)))
        .collect();
    // The checks of one argument or two are a few instructions each here; seccompiler would
    // spend about twenty on each, and the kernel's attach time grows with the program.
    let mut blocks = argument_blocks(options);
    blocks.retain(|(nr, _)| !numbers.iter().any(|&(n, _)| n == *nr as u32));
    numbers.extend(
        blocks
            .iter()
            .enumerate()
            .map(|(label, (nr, _))| (*nr as u32, Target::Label(label))),
    );
    numbers.sort_by_key(|&(nr, _)| nr);
    numbers.dedup_by_key(|&mut (nr, _)| nr);
    let mut labels = blocks.len();
    search(&numbers, &mut ops, &mut labels);
    for (label, (_, block)) in blocks.into_iter().enumerate() {
        ops.push(Op::Label(label));
        ops.extend(block);
    }
    assemble(&ops)
}

/// Where the low 32 bits of argument `i` lie in `struct seccomp_data` (x86_64 is little
/// endian); the kernel reads modes, flags and pids as 32-bit values.
fn arg_low(i: u8) -> u32 {
    16 + 8 * i as u32
}

/// The argument checks the prefix holds itself: set-id mode bits ([`MODE_ARGUMENTS`]) and,
/// when the process shares the host's namespaces, `prlimit64`'s pid. Each block ends in a
/// return.
fn argument_blocks(options: FilterOptions) -> Vec<(libc::c_long, Vec<Op>)> {
    let set_id = libc::S_ISUID | libc::S_ISGID;
    let creating = CREATING_FLAGS.iter().fold(0, |all, &f| all | f as u32);
    let mut blocks: Vec<(libc::c_long, Vec<Op>)> = MODE_ARGUMENTS
        .iter()
        .map(|&(nr, mode, flags)| {
            let mut ops = Vec::new();
            if let Some(flags) = flags {
                ops.push(Op::Load(arg_low(flags)));
                ops.push(Op::Jump {
                    cmp: Cmp::Set,
                    k: creating,
                    t: Target::Next,
                    f: Target::Ret(Verdict::Allow),
                });
            }
            ops.push(Op::Load(arg_low(mode)));
            ops.push(Op::Jump {
                cmp: Cmp::Set,
                k: set_id,
                t: Target::Ret(Verdict::Eperm),
                f: Target::Ret(Verdict::Allow),
            });
            (nr, ops)
        })
        .collect();
    // `clone` reads its flags as 32 bits (`lower_32_bits` in the kernel), where every
    // namespace flag lies: one test of all of them (seccompiler spent nine instructions on
    // each flag, a quarter of the whole program).
    let namespaces = NAMESPACE_FLAGS.iter().fold(0u32, |all, &f| all | f as u32);
    blocks.push((
        libc::SYS_clone,
        vec![
            Op::Load(arg_low(0)),
            Op::Jump {
                cmp: Cmp::Set,
                k: namespaces,
                t: Target::Ret(Verdict::Eperm),
                f: Target::Ret(Verdict::Allow),
            },
        ],
    ));
    // `ioctl`'s request is an `unsigned int`.
    let mut requests = vec![libc::TIOCSTI as u32, libc::TIOCLINUX as u32];
    if options.deny_metadata_writes {
        requests.extend_from_slice(INODE_FLAG_IOCTLS);
    }
    let mut ioctl = vec![Op::Load(arg_low(1))];
    ioctl.extend(requests.into_iter().map(|k| Op::Jump {
        cmp: Cmp::Eq,
        k,
        t: Target::Ret(Verdict::Eperm),
        f: Target::Next,
    }));
    ioctl.push(Op::Always(Target::Ret(Verdict::Allow)));
    blocks.push((libc::SYS_ioctl, ioctl));
    if options.shares_host_namespaces {
        // glibc's getrlimit/setrlimit, nice and sched_setaffinity(0, ...) pass pid 0 (the
        // caller); any other pid may be a host process of the same uid.
        for &(nr, which) in OWN_PROCESS_ONLY {
            let mut ops = Vec::new();
            let who = match which {
                Some(process) => {
                    ops.push(Op::Load(arg_low(0)));
                    ops.push(Op::Jump {
                        cmp: Cmp::Eq,
                        k: process,
                        t: Target::Next,
                        f: Target::Ret(Verdict::Eperm),
                    });
                    1
                }
                None => 0,
            };
            ops.push(Op::Load(arg_low(who)));
            ops.push(Op::Jump {
                cmp: Cmp::Eq,
                k: 0,
                t: Target::Ret(Verdict::Allow),
                f: Target::Ret(Verdict::Eperm),
            });
            blocks.push((nr, ops));
        }
    }
    blocks
}

/// The calls that change another process's limits or scheduling, allowed (when the process
/// shares the host's namespaces) only on the caller itself: `(number, which)`. Without
/// `which` the pid is argument 0; with it, argument 0 must be `which` (the "one process"
/// selector, not a process group or a user) and the pid is argument 1. A same-uid host
/// process could otherwise be starved (`SCHED_IDLE`, nice 19, idle I/O class), pinned to one
/// CPU, or given `RLIMIT_CPU = 0`.
pub const OWN_PROCESS_ONLY: &[(libc::c_long, Option<u32>)] = &[
    (libc::SYS_prlimit64, None),
    (libc::SYS_sched_setparam, None),
    (libc::SYS_sched_setscheduler, None),
    (libc::SYS_sched_setattr, None),
    (libc::SYS_sched_setaffinity, None),
    (libc::SYS_setpriority, Some(libc::PRIO_PROCESS)),
    (libc::SYS_ioprio_set, Some(1)), // IOPRIO_WHO_PROCESS
];

/// Emits a binary search for the syscall number (already in A) over `numbers` (sorted, one
/// target each); a number that is not there is allowed.
///
/// The numbers become segments of the number line, `[start, next start)`, each with one
/// target: a run of consecutive numbers with the same target is one segment, and so is each
/// gap between them (allowed). The search is a tree of `JGE` on segment starts whose branches
/// jump straight to a segment's target, so it costs one instruction per segment boundary and
/// about seven comparisons per call.
fn search(numbers: &[(u32, Target)], ops: &mut Vec<Op>, labels: &mut usize) {
    let allow = Target::Ret(Verdict::Allow);
    let mut segments: Vec<(u32, Target)> = vec![(0, allow)];
    for &(nr, target) in numbers {
        // The last segment is the gap after the previous number; empty if it starts here.
        if segments.last().is_some_and(|&(start, _)| start == nr) {
            segments.pop();
        }
        if segments.last().map(|&(_, t)| t) != Some(target) {
            segments.push((nr, target));
        }
        segments.push((nr.saturating_add(1), allow));
    }
    split(&segments, ops, labels);
}

/// One node of [`search`]'s tree over `segments` (at least one).
fn split(segments: &[(u32, Target)], ops: &mut Vec<Op>, labels: &mut usize) {
    if let [(_, only)] = segments {
        ops.push(Op::Always(*only));
        return;
    }
    let (low, high) = segments.split_at(segments.len() / 2);
    let high_label = (high.len() > 1).then(|| {
        *labels += 1;
        *labels - 1
    });
    ops.push(Op::Jump {
        cmp: Cmp::Ge,
        k: high[0].0,
        t: high_label.map_or(high[0].1, Target::Label),
        f: if low.len() > 1 {
            Target::Next
        } else {
            low[0].1
        },
    });
    if low.len() > 1 {
        split(low, ops, labels);
    }
    if let Some(label) = high_label {
        ops.push(Op::Label(label));
        split(high, ops, labels);
    }
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
            Op::Jump { cmp, k, t, f } => {
                let code = match cmp {
                    Cmp::Eq => BPF_JEQ_K,
                    Cmp::Ge => BPF_JGE_K,
                    Cmp::Set => BPF_JSET_K,
                };
                out.push(pack(code, short(t)?, short(f)?, k));
            }
            Op::Always(target) => out.push(pack(BPF_JA, 0, 0, offset(target) as u32)),
            Op::Xor(k) => out.push(pack(BPF_XOR_K, 0, 0, k)),
            Op::OrX => out.push(pack(BPF_OR_X, 0, 0, 0)),
            Op::Tax => out.push(pack(BPF_TAX, 0, 0, 0)),
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
        (0..256)
            .map(|bits| FilterOptions {
                exec_notify: bits & 1 != 0,
                deny_sockets: bits & 2 != 0,
                restrict_socket_families: bits & 4 != 0,
                deny_memfd: bits & 8 != 0,
                shares_host_namespaces: bits & 16 != 0,
                deny_metadata_writes: bits & 32 != 0,
                supervise_unix: bits & 64 != 0,
                keep_process_group: bits & 128 != 0,
                // Both ways with exec_notify, without another 256 sets.
                relay_execs: bits & 3 == 3,
            })
            .collect()
    }

    /// The secret the tests seal tails with, and its three argument registers.
    const TEST_SECRET: [u32; 6] = [0x0123_4567, 0x89ab_cdef, 0xdead_beef, 7, 0, 0xffff_ffff];

    #[test]
    fn compiles_every_option_set_with_jumps_inside_the_program() {
        for options in every_option_set() {
            let program = unpack(&compile(options).unwrap().program);
            // Attach time grows with the program: seccompiler alone made 344 instructions of
            // the clone, ioctl and socket rules; the whole strict program is now 155 (171 at
            // most), and the hardened profile's own-process checks ([`OWN_PROCESS_ONLY`]) add
            // about 30.
            let bound = if options.shares_host_namespaces {
                220
            } else {
                185
            };
            assert!(program.len() < bound, "{} instructions", program.len());
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

    /// The hardened zygote runs under the shared program of the runs it serves
    /// ([`Filters::tail`], [`crate::zygote`]), and each G sets itself up under it before its
    /// tail: every call they make passes every such program, whatever the policy's options.
    #[test]
    fn the_zygotes_and_gs_own_calls_pass_every_shared_program() {
        for options in every_option_set() {
            if !(options.keep_process_group && options.shares_host_namespaces) {
                continue;
            }
            let program = unpack(&compile(options).unwrap().program);
            for (nr, args) in own_calls() {
                let verdict =
                    interpret(&program, &seccomp_data(AUDIT_ARCH_X86_64, nr as u32, args));
                assert_eq!(
                    verdict,
                    libc::SECCOMP_RET_ALLOW,
                    "syscall {nr} args {args:x?} under {options:?}"
                );
            }
        }
    }

    /// A zygote whose runs need no listener also runs under their tail, sealed with its own
    /// secret ([`crate::zygote`]): its own calls pass every such tail, and G's `setpgid` and
    /// `execve` pass it only with the zygote's secret in their unused registers
    /// ([`setpgid_sealed`], [`execve_sealed`]), never with those registers zero, as a
    /// command's own call would have them.
    #[test]
    fn the_zygotes_own_calls_pass_every_tail_it_holds_and_gs_need_its_secret() {
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let sealed = secret_registers(&TEST_SECRET);
        for options in every_option_set() {
            if !options.keep_process_group || options.relay_execs {
                continue;
            }
            let mut tail = unpack(&compile(options).unwrap().tail);
            assert!(seal(&mut tail, &TEST_SECRET), "{options:?}");
            let verdict = |nr: libc::c_long, args: [u64; 6]| {
                interpret(&tail, &seccomp_data(AUDIT_ARCH_X86_64, nr as u32, args))
            };
            for (nr, args) in own_calls() {
                if nr == libc::SYS_setpgid || nr == libc::SYS_execve {
                    continue;
                }
                assert_eq!(
                    verdict(nr, args),
                    libc::SECCOMP_RET_ALLOW,
                    "{nr} {options:?}"
                );
            }
            let with = |registers: [u64; 3]| [0, 0, 0, registers[0], registers[1], registers[2]];
            assert_eq!(
                verdict(libc::SYS_setpgid, with(sealed)),
                libc::SECCOMP_RET_ALLOW
            );
            assert_eq!(
                verdict(libc::SYS_setpgid, with([0; 3])),
                eperm,
                "{options:?}"
            );
            assert_eq!(
                verdict(libc::SYS_setsid, with(sealed)),
                eperm,
                "{options:?}"
            );
            assert_eq!(
                verdict(libc::SYS_execve, with(sealed)),
                libc::SECCOMP_RET_ALLOW
            );
            let unsealed_exec = if options.exec_notify {
                eperm
            } else {
                libc::SECCOMP_RET_ALLOW
            };
            assert_eq!(
                verdict(libc::SYS_execve, with([0; 3])),
                unsealed_exec,
                "{options:?}"
            );
        }
    }

    /// The calls the zygote and G make before G's `execve`.
    fn own_calls() -> Vec<(libc::c_long, [u64; 6])> {
        let seccomp_ioctls = [0xc050_2100u64, 0xc018_2101, 0x4008_2102];
        let mut calls: Vec<(libc::c_long, [u64; 6])> = vec![
            (
                libc::SYS_clone,
                [
                    (libc::CLONE_VM | libc::CLONE_PIDFD | libc::SIGCHLD) as u64,
                    0,
                    0,
                    0,
                    0,
                    0,
                ],
            ),
            (
                libc::SYS_socketpair,
                [
                    libc::AF_UNIX as u64,
                    (libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC) as u64,
                    0,
                    0,
                    0,
                    0,
                ],
            ),
            (
                libc::SYS_openat,
                [
                    libc::AT_FDCWD as u64,
                    0,
                    (libc::O_WRONLY | libc::O_CLOEXEC) as u64,
                    0,
                    0,
                    0,
                ],
            ),
            (
                libc::SYS_prlimit64,
                [0, libc::RLIMIT_NOFILE as u64, 1, 0, 0, 0],
            ),
            (libc::SYS_setpgid, [0; 6]),
        ];
        calls.extend(seccomp_ioctls.map(|r| (libc::SYS_ioctl, [5, r, 0, 0, 0, 0])));
        calls.extend(
            [
                libc::SYS_poll,
                libc::SYS_ppoll,
                libc::SYS_recvmsg,
                libc::SYS_sendmsg,
                libc::SYS_sendto,
                libc::SYS_read,
                libc::SYS_write,
                libc::SYS_pread64,
                libc::SYS_close,
                libc::SYS_close_range,
                libc::SYS_pipe2,
                libc::SYS_fcntl,
                libc::SYS_dup2,
                libc::SYS_wait4,
                libc::SYS_waitid,
                libc::SYS_kill,
                libc::SYS_pidfd_send_signal,
                libc::SYS_pidfd_open,
                libc::SYS_getpgid,
                libc::SYS_getpid,
                libc::SYS_getppid,
                libc::SYS_clock_gettime,
                libc::SYS_clock_nanosleep,
                libc::SYS_nanosleep,
                libc::SYS_mmap,
                libc::SYS_munmap,
                libc::SYS_mprotect,
                libc::SYS_madvise,
                libc::SYS_mremap,
                libc::SYS_brk,
                libc::SYS_futex,
                libc::SYS_rt_sigprocmask,
                libc::SYS_rt_sigaction,
                libc::SYS_signalfd4,
                libc::SYS_sched_yield,
                libc::SYS_getrandom,
                libc::SYS_prctl,
                libc::SYS_capget,
                libc::SYS_capset,
                libc::SYS_umask,
                libc::SYS_chdir,
                libc::SYS_landlock_create_ruleset,
                libc::SYS_landlock_restrict_self,
                libc::SYS_seccomp,
                libc::SYS_execve,
                libc::SYS_exit,
                libc::SYS_exit_group,
            ]
            .map(|nr| (nr, [0u64; 6])),
        );
        calls
    }

    /// Runs a classic BPF program on a `seccomp_data` (the subset seccomp programs use).
    fn interpret(program: &[libc::sock_filter], data: &[u8; 64]) -> u32 {
        run(program, data).0
    }

    /// [`interpret`], and how many instructions it executed.
    fn run(program: &[libc::sock_filter], data: &[u8; 64]) -> (u32, usize) {
        let (mut a, mut x): (u32, u32) = (0, 0);
        let (mut pc, mut steps) = (0, 0);
        loop {
            steps += 1;
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
                    let operand = if ins.code as u32 & libc::BPF_X != 0 {
                        x
                    } else {
                        k
                    };
                    match (ins.code & 0xf0) as u32 {
                        libc::BPF_AND => a &= operand,
                        libc::BPF_OR => a |= operand,
                        libc::BPF_XOR => a ^= operand,
                        _ => panic!("unexpected ALU instruction {:#x}", ins.code),
                    }
                    pc += 1;
                }
                libc::BPF_MISC => {
                    assert_eq!(ins.code, BPF_TAX, "the only register move is TAX");
                    x = a;
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
                libc::BPF_RET => return (k, steps),
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
        let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
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
        // The kernel reads modes, flags, pids and ioctl requests as 32-bit values.
        let low = |i: usize| args[i] as u32;
        let set_id = |mode: u32| mode & (libc::S_ISUID | libc::S_ISGID) != 0;
        let creates = |flags: u32| {
            flags & libc::O_CREAT as u32 != 0
                || flags & libc::O_TMPFILE as u32 & !(libc::O_DIRECTORY as u32) != 0
        };
        let set_id_file = (is(libc::SYS_chmod)
            || is(libc::SYS_fchmod)
            || is(libc::SYS_creat)
            || is(libc::SYS_mknod))
            && set_id(low(1))
            || (is(libc::SYS_fchmodat) || is(libc::SYS_fchmodat2) || is(libc::SYS_mknodat))
                && set_id(low(2))
            || is(libc::SYS_open) && creates(low(1)) && set_id(low(2))
            || is(libc::SYS_openat) && creates(low(2)) && set_id(low(3));
        let metadata_write = [
            "chmod",
            "fchmod",
            "fchmodat",
            "fchmodat2",
            "chown",
            "fchown",
            "lchown",
            "fchownat",
            "utime",
            "utimes",
            "futimesat",
            "utimensat",
            "setxattr",
            "lsetxattr",
            "fsetxattr",
            "setxattrat",
            "removexattr",
            "lremovexattr",
            "fremovexattr",
            "removexattrat",
        ]
        .iter()
        .any(|name| is(syscall_number(name)));
        let sysv = [
            "shmget",
            "shmat",
            "shmctl",
            "shmdt",
            "semget",
            "semop",
            "semctl",
            "semtimedop",
            "msgget",
            "msgsnd",
            "msgrcv",
            "msgctl",
            "mq_open",
            "mq_unlink",
            "mq_timedsend",
            "mq_timedreceive",
            "mq_notify",
            "mq_getsetattr",
        ]
        .iter()
        .any(|name| is(syscall_number(name)));
        if arch != AUDIT_ARCH_X86_64 || nr & X32_SYSCALL_BIT != 0 {
            libc::SECCOMP_RET_KILL_PROCESS
        } else if is(libc::SYS_clone3) || is(libc::SYS_openat2) {
            enosys
        } else if options.keep_process_group
            && (is(libc::SYS_setpgid)
                || options.exec_notify && (is(libc::SYS_execve) || is(libc::SYS_execveat)))
        {
            // The command's own execve and its process's setpgid, by the secret; any other
            // setpgid is refused, any other execve refused or supervised for the interpreter
            // chain's relays.
            let sealed = args[3..] == secret_registers(&TEST_SECRET);
            if (is(libc::SYS_execve) || is(libc::SYS_setpgid)) && sealed {
                libc::SECCOMP_RET_ALLOW
            } else if is(libc::SYS_setpgid) {
                eperm
            } else if options.relay_execs {
                libc::SECCOMP_RET_USER_NOTIF
            } else {
                eperm
            }
        } else if (options.exec_notify && (is(libc::SYS_execve) || is(libc::SYS_execveat)))
            || (options.supervise_unix && is(libc::SYS_connect))
        {
            libc::SECCOMP_RET_USER_NOTIF
        } else if options.deny_memfd && (is(libc::SYS_memfd_create) || is(libc::SYS_memfd_secret)) {
            enosys
        } else if DENIED.iter().any(|&n| is(n))
            || (is(libc::SYS_clone) && args[0] & namespaces != 0)
            || (is(libc::SYS_ioctl)
                && [libc::TIOCSTI as u32, libc::TIOCLINUX as u32].contains(&low(1)))
            || (is(libc::SYS_ioctl)
                && options.deny_metadata_writes
                && [0x4008_6602, 0x4004_6602, 0x401c_5820, 0x4080_6685].contains(&low(1)))
            || (is(libc::SYS_socket)
                && (options.deny_sockets || (options.restrict_socket_families && !allowed_family)))
            || set_id_file
            || (options.deny_metadata_writes && metadata_write)
            || (options.shares_host_namespaces && sysv)
            || (options.keep_process_group && is(libc::SYS_setsid))
            || (options.shares_host_namespaces
                && [
                    libc::SYS_prlimit64,
                    libc::SYS_sched_setparam,
                    libc::SYS_sched_setscheduler,
                    libc::SYS_sched_setattr,
                    libc::SYS_sched_setaffinity,
                ]
                .iter()
                .any(|&n| is(n))
                && low(0) != 0)
            || (options.shares_host_namespaces
                && is(libc::SYS_setpriority)
                && (low(0) != libc::PRIO_PROCESS || low(1) != 0))
            || (options.shares_host_namespaces
                && is(libc::SYS_ioprio_set)
                && (low(0) != 1 || low(1) != 0))
            || ((is(libc::SYS_socket) && options.supervise_unix
                || is(libc::SYS_socketpair) && (options.supervise_unix || options.deny_sockets))
                && family == libc::AF_UNIX
                && [libc::SOCK_DGRAM as u32, libc::SOCK_RAW as u32]
                    .contains(&(args[1] as u32 & 0xf)))
        {
            eperm
        } else {
            libc::SECCOMP_RET_ALLOW
        }
    }

    /// x86_64 syscall numbers by name, written out independently of the libc crate's.
    fn syscall_number(name: &str) -> libc::c_long {
        match name {
            "chmod" => 90,
            "fchmod" => 91,
            "chown" => 92,
            "fchown" => 93,
            "lchown" => 94,
            "utime" => 132,
            "setxattr" => 188,
            "lsetxattr" => 189,
            "fsetxattr" => 190,
            "removexattr" => 197,
            "lremovexattr" => 198,
            "fremovexattr" => 199,
            "utimes" => 235,
            "fchownat" => 260,
            "futimesat" => 261,
            "fchmodat" => 268,
            "utimensat" => 280,
            "fchmodat2" => 452,
            "setxattrat" => 463,
            "removexattrat" => 466,
            "shmget" => 29,
            "shmat" => 30,
            "shmctl" => 31,
            "semget" => 64,
            "semop" => 65,
            "semctl" => 66,
            "shmdt" => 67,
            "msgget" => 68,
            "msgsnd" => 69,
            "msgrcv" => 70,
            "msgctl" => 71,
            "semtimedop" => 220,
            "mq_open" => 240,
            "mq_unlink" => 241,
            "mq_timedsend" => 242,
            "mq_timedreceive" => 243,
            "mq_notify" => 244,
            "mq_getsetattr" => 245,
            other => panic!("no number for {other}"),
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
        for request in [
            0x4008_6602u64,
            0x4004_6602,
            0x401c_5820,
            0x4080_6685,
            0x8008_6601,
        ] {
            arg_sets.push([3, request, 0, 0, 0, 0]);
        }
        // Modes and open flags: every mode at every position, with and without creating flags
        // before it (open: flags 1, mode 2; openat: flags 2, mode 3).
        let flags = [
            0,
            libc::O_RDWR as u64,
            libc::O_CREAT as u64 | libc::O_WRONLY as u64,
            libc::O_TMPFILE as u64 | libc::O_RDWR as u64,
            libc::O_DIRECTORY as u64,
        ];
        let modes = [
            0o644u64,
            0o4755,
            0o2755,
            0o1777,
            0o6000,
            libc::S_IFREG as u64 | 0o4755,
            0xffff_ffff_0000_0755,
            0x0000_0001_0000_0755,
        ];
        for f in flags {
            for m in modes {
                arg_sets.push([0, f, m, m, 0, 0]);
                arg_sets.push([libc::AT_FDCWD as u64, m, f, m, 0, 0]);
            }
        }
        // prlimit64's pid: 0 (the caller), another pid, only high bits (still pid 0).
        for pid in [1u64, 4242, 0x1_0000_0000, u32::MAX as u64] {
            arg_sets.push([pid, libc::RLIMIT_CPU as u64, 0, 0, 0, 0]);
            // setpriority/ioprio_set: (which, who); which 0 and 1 are PRIO_PROCESS and
            // IOPRIO_WHO_PROCESS, 2 a user.
            for which in [0u64, 1, 2, 1 << 32] {
                arg_sets.push([which, pid, 19, 0, 0, 0]);
                arg_sets.push([which, pid & !0xffff_ffff, 19, 0, 0, 0]);
            }
        }
        for kind in [libc::SOCK_DGRAM, libc::SOCK_SEQPACKET, libc::SOCK_RAW] {
            for flags in [0, libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK] {
                let kind = (kind | flags) as u64;
                arg_sets.push([libc::AF_UNIX as u64, kind, 0, 0, 0, 0]);
                arg_sets.push([libc::AF_UNIX as u64 | 1 << 32, kind | 1 << 40, 0, 0, 0, 0]);
                arg_sets.push([libc::AF_INET as u64, kind, 0, 0, 0, 0]);
            }
        }
        // The command's own execve carries the secret in its unused registers; near misses.
        let [a, b, c] = secret_registers(&TEST_SECRET);
        for extra in [
            [a, b, c],
            [a, b, c ^ 1 << 32],
            [a ^ 1, b, c],
            [0, 0, 0],
            [c, b, a],
        ] {
            arg_sets.push([1, 2, 3, extra[0], extra[1], extra[2]]);
        }
        let numbers: Vec<u32> = (0..=470)
            .chain([1000, 0x4000_0000, 0x4000_0001, 0x4000_0000 + 59, u32::MAX])
            .collect();
        // Every argument set for the numbers any rule names (and their neighbours, to catch an
        // off-by-one in the search), a sample of them for the others: the full product takes
        // a minute in a debug build.
        let named: Vec<u32> = DENIED
            .iter()
            .chain(SYSV_IPC)
            .chain(POSIX_MQUEUE)
            .chain(METADATA_WRITES)
            .chain(MODE_ARGUMENTS.iter().map(|(nr, _, _)| nr))
            .chain(&[
                libc::SYS_clone,
                libc::SYS_clone3,
                libc::SYS_ioctl,
                libc::SYS_socket,
                libc::SYS_prlimit64,
                libc::SYS_sched_setparam,
                libc::SYS_sched_setscheduler,
                libc::SYS_sched_setattr,
                libc::SYS_sched_setaffinity,
                libc::SYS_setpriority,
                libc::SYS_ioprio_set,
                libc::SYS_openat2,
                libc::SYS_memfd_create,
                libc::SYS_memfd_secret,
                libc::SYS_execve,
                libc::SYS_execveat,
                libc::SYS_setpgid,
                libc::SYS_setsid,
            ])
            .flat_map(|&nr| [nr as u32 - 1, nr as u32, nr as u32 + 1])
            .collect();
        let sample: Vec<[u64; 6]> = arg_sets.iter().copied().step_by(7).collect();
        let mut checked = 0;
        for options in every_option_set() {
            let filters = compile(options).unwrap();
            assert_eq!(filters.tail.is_empty(), !options.keep_process_group);
            let program = unpack(&filters.program);
            let mut tail = unpack(&filters.tail);
            if options.keep_process_group {
                assert!(seal(&mut tail, &TEST_SECRET), "{options:?}");
            }
            for arch in [AUDIT_ARCH_X86_64, 0x4000_0003] {
                for &nr in &numbers {
                    let sets = if named.contains(&nr) && arch == AUDIT_ARCH_X86_64 {
                        &arg_sets
                    } else {
                        &sample
                    };
                    for &args in sets {
                        let data = seccomp_data(arch, nr, args);
                        let got = stronger(
                            interpret(&program, &data),
                            (!tail.is_empty()).then(|| interpret(&tail, &data)),
                        );
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
        assert!(checked > 1_000_000, "{checked}");
    }

    /// The verdict the kernel keeps of a program and the tail stacked on it, as
    /// `seccomp_run_filters` does: it runs the newest first and replaces the verdict only with
    /// a lower action value, read as a signed number (kill, trap, errno, notify, trace, log,
    /// allow), so on a tie the tail's stands.
    fn stronger(program: u32, tail: Option<u32>) -> u32 {
        let action = |v: u32| (v & libc::SECCOMP_RET_ACTION_FULL) as i32;
        match tail {
            Some(t) if action(program) >= action(t) => t,
            _ => program,
        }
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

    /// A guess at the secret is refused after the same number of instructions however many
    /// of its six halves are right, for `execve` and for `setpgid`, in every tail: the time of
    /// a refused call tells nothing about them.
    #[test]
    fn the_secret_is_compared_in_constant_time() {
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        for (exec_notify, relay_execs) in [(false, false), (true, false), (true, true)] {
            let options = FilterOptions {
                keep_process_group: true,
                exec_notify,
                relay_execs,
                ..FilterOptions::default()
            };
            let mut tail = unpack(&compile(options).unwrap().tail);
            assert!(seal(&mut tail, &TEST_SECRET));
            let mut calls = vec![(libc::SYS_setpgid, eperm)];
            if exec_notify {
                let later = if relay_execs {
                    libc::SECCOMP_RET_USER_NOTIF
                } else {
                    eperm
                };
                calls.push((libc::SYS_execve, later));
            }
            for (nr, refused) in calls {
                let call = |halves: [u32; 6]| {
                    let [r10, r8, r9] = secret_registers(&halves);
                    let args = [0, 0, 0, r10, r8, r9];
                    run(&tail, &seccomp_data(AUDIT_ARCH_X86_64, nr as u32, args))
                };
                assert_eq!(call(TEST_SECRET).0, libc::SECCOMP_RET_ALLOW, "{nr}");
                // Guesses with the first k halves right, and with every half but one right.
                let mut guesses = Vec::new();
                for right in 0..6 {
                    let mut guess = TEST_SECRET;
                    guess[right..].iter_mut().for_each(|h| *h = !*h);
                    guesses.push(guess);
                    let mut guess = TEST_SECRET;
                    guess[right] ^= 1 << 31;
                    guesses.push(guess);
                }
                let steps = call([0; 6]).1;
                for guess in guesses {
                    assert_eq!(call(guess), (refused, steps), "{nr} {guess:x?} {options:?}");
                }
            }
        }
    }

    #[test]
    fn a_tail_is_sealed_once_in_each_of_its_six_places() {
        for options in every_option_set() {
            let filters = compile(options).unwrap();
            let mut tail = unpack(&filters.tail);
            let sealable = options.keep_process_group;
            // The command's process seals it on its stack, in room for 64.
            assert!(tail.len() <= 41, "{} instructions", tail.len());
            assert_eq!(seal(&mut tail, &TEST_SECRET), sealable, "{options:?}");
            if sealable {
                // A second seal finds nothing left to write as placeholders: it writes the
                // same six places, never a seventh.
                let before = tail.clone();
                assert!(seal(&mut tail, &TEST_SECRET));
                assert!(before.iter().zip(&tail).all(|(x, y)| x.k == y.k));
            }
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
