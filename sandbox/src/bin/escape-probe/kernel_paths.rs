//! The probe's actions for escapes that go around paths rather than through them: set-user-ID
//! and set-group-ID modes, file capabilities, metadata writes Landlock does not govern,
//! anonymous executables, SysV IPC and other processes' resource limits.
//!
//! Each one reports the effect the kernel left, not only a return code: `chmod` succeeds only
//! if the file then carries the mode asked for, so a kernel that silently drops a bit counts as
//! blocked.

use std::ffi::CString;
use std::io::Error;
use std::os::unix::ffi::OsStrExt;

use super::{blocked, blocked_no_errno, check, cstr, parse, run_child, Fd, Outcome};

/// Usage lines of the actions below, appended to the probe's usage.
pub const USAGE: &str = "
  chmod MODE PATH                 chmod(PATH, MODE) (octal); succeeds if PATH then has MODE
  fchmod MODE PATH                open PATH read-only, fchmod(fd, MODE); same check
  fchmodat2 MODE PATH             fchmodat2 on an O_PATH fd with AT_EMPTY_PATH; same check
  create VIA MODE PATH            create PATH with MODE through VIA: open, openat, creat,
                                  openat2, tmpfile (O_TMPFILE then linked), mknod, mknodat;
                                  succeeds if PATH then carries MODE's set-id bits
  write-keeps-setid PATH          append to PATH; succeeds if its set-id bits survive
  setxattr PATH NAME HEX          setxattr(PATH, NAME, bytes of HEX)
  chown-self PATH                 chown(PATH, own uid, own gid) (a no-op that bumps ctime)
  utimes PATH SECONDS             set PATH's access and modification times to SECONDS
  exec-loader-memfd CODE LOADER SRC [ARGS...]
                                  copy SRC into a memfd (MFD_NOEXEC_SEAL when the kernel has
                                  it) and run LOADER /proc/self/fd/N ARGS; succeeds on exit CODE
  exec-tmpfile CODE DIR SRC [ARGS...]
                                  copy SRC into an O_TMPFILE file in DIR, execveat it
  prlimit PID                     prlimit64(PID, RLIMIT_MSGQUEUE, 4096)
  sysv-shmat ID NEEDLE            shmat the SysV segment ID (no key); succeeds if it holds NEEDLE
  sysv-msgsnd KEY                 msgget(KEY), msgsnd one message
  posix-mq NAME                   mq_open(NAME) for writing, mq_send one message";

/// Runs `action` if it is one of this module's; `None` otherwise.
pub fn run(action: &str, args: &[String]) -> Option<Outcome> {
    let arg = |i: usize| -> Result<&str, Outcome> {
        args.get(i)
            .map(String::as_str)
            .ok_or_else(|| Outcome::Error(format!("missing argument {}", i + 1)))
    };
    let mode = |i: usize| -> Result<u32, Outcome> {
        u32::from_str_radix(arg(i)?, 8)
            .map_err(|_| Outcome::Error(format!("`{}` is not an octal mode", args[i])))
    };
    let result = (|| -> Result<Outcome, Outcome> {
        Ok(match action {
            "chmod" => chmod(Via::Path, mode(0)?, arg(1)?),
            "fchmod" => chmod(Via::Fd, mode(0)?, arg(1)?),
            "fchmodat2" => chmod(Via::EmptyPath, mode(0)?, arg(1)?),
            "create" => create(arg(0)?, mode(1)?, arg(2)?),
            "write-keeps-setid" => write_keeps_setid(arg(0)?),
            "setxattr" => setxattr(arg(0)?, arg(1)?, arg(2)?),
            "chown-self" => chown_self(arg(0)?),
            "utimes" => utimes(arg(0)?, parse(arg(1)?)?),
            "exec-loader-memfd" => exec_loader_memfd(parse(arg(0)?)?, arg(1)?, arg(2)?, &args[3..]),
            "exec-tmpfile" => exec_tmpfile(parse(arg(0)?)?, arg(1)?, arg(2)?, &args[3..]),
            "prlimit" => prlimit(parse(arg(0)?)?),
            "sysv-shmat" => sysv_shmat(parse(arg(0)?)?, arg(1)?),
            "sysv-msgsnd" => sysv_msgsnd(parse(arg(0)?)?),
            "posix-mq" => posix_mq(arg(0)?),
            _ => return Err(Outcome::Error(String::new())),
        })
    })();
    match result {
        Ok(outcome) => Some(outcome),
        Err(Outcome::Error(e)) if e.is_empty() => None,
        Err(outcome) => Some(outcome),
    }
}

/// The mode bits of `path` (not following a final symlink).
fn mode_of(path: &str) -> Result<u32, Error> {
    let c = cstr(path);
    // SAFETY: lstat into a zeroed struct.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        check(libc::lstat(c.as_ptr(), &mut st) as _)?;
        Ok(st.st_mode & 0o7777)
    }
}

fn open(path: &str, flags: libc::c_int) -> Result<Fd, Error> {
    let c = cstr(path);
    // SAFETY: open with a valid path.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    check(fd as _).map(|_| Fd(fd))
}

enum Via {
    Path,
    Fd,
    EmptyPath,
}

fn chmod(via: Via, mode: u32, path: &str) -> Outcome {
    let c = cstr(path);
    let empty = cstr("");
    let (name, done) = match via {
        // SAFETY: raw chmod with a valid path (the libc wrapper may use fchmodat).
        Via::Path => (
            "chmod",
            check(unsafe { libc::syscall(libc::SYS_chmod, c.as_ptr(), mode) }),
        ),
        Via::Fd => (
            "fchmod",
            open(path, libc::O_RDONLY)
                // SAFETY: fchmod on an owned fd.
                .and_then(|fd| check(unsafe { libc::fchmod(fd.0, mode) } as _)),
        ),
        Via::EmptyPath => (
            "fchmodat2(AT_EMPTY_PATH)",
            open(path, libc::O_PATH).and_then(|fd| {
                // SAFETY: fchmodat2 on an owned O_PATH fd with an empty path.
                check(unsafe {
                    libc::syscall(
                        libc::SYS_fchmodat2,
                        fd.0,
                        empty.as_ptr(),
                        mode,
                        libc::AT_EMPTY_PATH,
                    )
                })
            }),
        ),
    };
    if let Err(e) = done {
        return blocked(e, format!("{name}({path}, {mode:o})"));
    }
    match mode_of(path) {
        Ok(now) if now == mode => Outcome::Succeeded(format!("{path} now has mode {now:o}")),
        Ok(now) => blocked_no_errno(format!("{name} returned 0 but {path} has mode {now:o}")),
        Err(e) => Outcome::Error(format!("stat {path}: {e}")),
    }
}

/// Creates `path` with `mode` through one of the creating calls.
fn create(via: &str, mode: u32, path: &str) -> Outcome {
    let c = cstr(path);
    let mode_l = mode as libc::c_long;
    let creat = libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC;
    // SAFETY (all arms): raw creating syscalls with a valid path; descriptors are closed.
    let result: Result<(), Error> = unsafe {
        match via {
            "open" => check(libc::syscall(libc::SYS_open, c.as_ptr(), creat, mode_l))
                .map(|fd| drop(Fd(fd as _))),
            "openat" => check(libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                c.as_ptr(),
                creat,
                mode_l,
            ))
            .map(|fd| drop(Fd(fd as _))),
            "creat" => check(libc::syscall(libc::SYS_creat, c.as_ptr(), mode_l))
                .map(|fd| drop(Fd(fd as _))),
            "openat2" => {
                #[repr(C)]
                struct OpenHow {
                    flags: u64,
                    mode: u64,
                    resolve: u64,
                }
                let how = OpenHow {
                    flags: creat as u64,
                    mode: mode as u64,
                    resolve: 0,
                };
                check(libc::syscall(
                    libc::SYS_openat2,
                    libc::AT_FDCWD,
                    c.as_ptr(),
                    &how as *const OpenHow,
                    std::mem::size_of::<OpenHow>(),
                ))
                .map(|fd| drop(Fd(fd as _)))
            }
            "mknod" => check(libc::syscall(
                libc::SYS_mknod,
                c.as_ptr(),
                libc::S_IFREG as libc::c_long | mode_l,
                0,
            ))
            .map(drop),
            "mknodat" => check(libc::syscall(
                libc::SYS_mknodat,
                libc::AT_FDCWD,
                c.as_ptr(),
                libc::S_IFREG as libc::c_long | mode_l,
                0,
            ))
            .map(drop),
            "tmpfile" => tmpfile_linked(path, mode),
            other => return Outcome::Error(format!("unknown way to create `{other}`")),
        }
    };
    if let Err(e) = result {
        return blocked(e, format!("{via}({path}, {mode:o})"));
    }
    let want = mode & 0o6000;
    match mode_of(path) {
        Ok(now) if now & 0o6000 == want => {
            Outcome::Succeeded(format!("{via} created {path} with mode {now:o}"))
        }
        Ok(now) => blocked_no_errno(format!("{via} created {path} with mode {now:o} only")),
        Err(e) => Outcome::Error(format!("stat {path}: {e}")),
    }
}

/// An `O_TMPFILE` file with `mode` in `path`'s directory, linked in as `path`.
fn tmpfile_linked(path: &str, mode: u32) -> Result<(), Error> {
    let dir = std::path::Path::new(path)
        .parent()
        .map_or_else(|| ".".into(), |d| d.as_os_str().to_owned());
    let dir = CString::new(dir.as_bytes()).expect("no NUL in the path");
    // SAFETY: raw openat with O_TMPFILE on a valid directory path.
    let fd = check(unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            dir.as_ptr(),
            libc::O_TMPFILE | libc::O_WRONLY | libc::O_CLOEXEC,
            mode as libc::c_long,
        )
    })?;
    let fd = Fd(fd as _);
    let from = cstr(&format!("/proc/self/fd/{}", fd.0));
    let to = cstr(path);
    // SAFETY: linkat of the magic link with AT_SYMLINK_FOLLOW (needs no capability).
    check(unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    } as _)
    .map(drop)
}

fn write_keeps_setid(path: &str) -> Outcome {
    let fd = match open(path, libc::O_WRONLY | libc::O_APPEND) {
        Ok(fd) => fd,
        Err(e) => return blocked(e, format!("open {path} for writing")),
    };
    // SAFETY: writes a static buffer to an owned fd.
    if let Err(e) = check(unsafe { libc::write(fd.0, b"x".as_ptr().cast(), 1) } as _) {
        return blocked(e, format!("write to {path}"));
    }
    drop(fd);
    match mode_of(path) {
        Ok(now) if now & 0o6000 != 0 => {
            Outcome::Succeeded(format!("wrote to {path}, which kept mode {now:o}"))
        }
        Ok(now) => blocked_no_errno(format!("the write cleared the set-id bits: mode {now:o}")),
        Err(e) => Outcome::Error(format!("stat {path}: {e}")),
    }
}

fn setxattr(path: &str, name: &str, hex: &str) -> Outcome {
    let value: Result<Vec<u8>, _> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("?"), 16))
        .collect();
    let Ok(value) = value else {
        return Outcome::Error(format!("`{hex}` is not hexadecimal"));
    };
    let (c, n) = (cstr(path), cstr(name));
    // SAFETY: setxattr with valid strings and a live buffer.
    let rc = unsafe {
        libc::setxattr(
            c.as_ptr(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    match check(rc as _) {
        Ok(_) => Outcome::Succeeded(format!("set {name} on {path}")),
        Err(e) => blocked(e, format!("setxattr({path}, {name})")),
    }
}

fn chown_self(path: &str) -> Outcome {
    let c = cstr(path);
    // SAFETY: getters and a raw chown with a valid path.
    let rc = unsafe { libc::syscall(libc::SYS_chown, c.as_ptr(), libc::getuid(), libc::getgid()) };
    match check(rc) {
        Ok(_) => Outcome::Succeeded(format!("chown of {path} to its own owner")),
        Err(e) => blocked(e, format!("chown({path})")),
    }
}

fn utimes(path: &str, seconds: i64) -> Outcome {
    let c = cstr(path);
    let times = [libc::timespec {
        tv_sec: seconds,
        tv_nsec: 0,
    }; 2];
    // SAFETY: utimensat with a valid path and two timespecs.
    let rc = unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), times.as_ptr(), 0) };
    match check(rc as _) {
        Ok(_) => Outcome::Succeeded(format!("set the times of {path} to {seconds}")),
        Err(e) => blocked(e, format!("utimensat({path})")),
    }
}

/// Copies `src` into `fd`.
fn copy_into(fd: &Fd, src: &str) -> Result<(), Outcome> {
    let content = std::fs::read(src)
        .map_err(|e| Outcome::Error(format!("cannot read {src} to copy it: {e}")))?;
    // SAFETY: writes an owned buffer to an owned fd.
    let written = unsafe { libc::write(fd.0, content.as_ptr().cast(), content.len()) };
    if written != content.len() as isize {
        return Err(Outcome::Error(format!(
            "short write of the copy: {}",
            Error::last_os_error()
        )));
    }
    Ok(())
}

fn exec_loader_memfd(expect: i32, loader: &str, src: &str, args: &[String]) -> Outcome {
    const MFD_NOEXEC_SEAL: libc::c_uint = 8;
    let name = cstr("escape-probe");
    // The sealed kind cannot be fexecve'd; the loader maps it all the same. Kernels before
    // 6.3 refuse the flag, so fall back to a plain memfd there.
    // SAFETY: memfd_create with a valid name; no close-on-exec, the loader opens it by path.
    let mut fd = unsafe { libc::memfd_create(name.as_ptr(), MFD_NOEXEC_SEAL) };
    if fd < 0 && Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // SAFETY: as above.
        fd = unsafe { libc::memfd_create(name.as_ptr(), 0) };
    }
    if fd < 0 {
        return blocked(Error::last_os_error(), "memfd_create");
    }
    let fd = Fd(fd);
    if let Err(outcome) = copy_into(&fd, src) {
        return outcome;
    }
    let mut argv = vec![format!("/proc/self/fd/{}", fd.0)];
    argv.extend(args.iter().cloned());
    let program = cstr(loader);
    run_child(expect, loader, &argv, |argv, envp| {
        // SAFETY: execve with valid argv/envp.
        unsafe { libc::execve(program.as_ptr(), argv, envp) };
    })
}

fn exec_tmpfile(expect: i32, dir: &str, src: &str, args: &[String]) -> Outcome {
    let d = cstr(dir);
    // SAFETY: raw openat with O_TMPFILE on a valid directory path.
    let fd = match check(unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            d.as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o700 as libc::c_long,
        )
    }) {
        Ok(fd) => Fd(fd as _),
        Err(e) => return blocked(e, format!("O_TMPFILE in {dir}")),
    };
    if let Err(outcome) = copy_into(&fd, src) {
        return outcome;
    }
    // A descriptor open for writing cannot be executed (ETXTBSY): reopen it read-only.
    let reader = match open(&format!("/proc/self/fd/{}", fd.0), libc::O_RDONLY) {
        Ok(r) => r,
        Err(e) => return Outcome::Error(format!("reopening the O_TMPFILE file: {e}")),
    };
    drop(fd);
    let empty = cstr("");
    run_child(
        expect,
        &format!("O_TMPFILE copy of {src}"),
        args,
        |argv, envp| {
            // SAFETY: execveat on an owned fd with AT_EMPTY_PATH and valid argv/envp.
            unsafe {
                libc::syscall(
                    libc::SYS_execveat,
                    reader.0,
                    empty.as_ptr(),
                    argv,
                    envp,
                    libc::AT_EMPTY_PATH,
                )
            };
        },
    )
}

fn prlimit(pid: libc::pid_t) -> Outcome {
    let limit = libc::rlimit64 {
        rlim_cur: 4096,
        rlim_max: 4096,
    };
    // SAFETY: raw prlimit64 with a valid new limit and no old one.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_prlimit64,
            pid,
            libc::RLIMIT_MSGQUEUE,
            &limit as *const libc::rlimit64,
            std::ptr::null_mut::<libc::rlimit64>(),
        )
    };
    match check(rc) {
        Ok(_) => Outcome::Succeeded(format!("lowered RLIMIT_MSGQUEUE of pid {pid} to 4096")),
        Err(e) => blocked(e, format!("prlimit64({pid})")),
    }
}

fn sysv_shmat(id: libc::c_int, needle: &str) -> Outcome {
    // SAFETY: raw shmat (no key lookup at all); the mapping is read and detached.
    unsafe {
        let at = libc::syscall(libc::SYS_shmat, id, 0usize, libc::SHM_RDONLY);
        if at == -1 {
            return blocked(Error::last_os_error(), format!("shmat({id})"));
        }
        let bytes = std::slice::from_raw_parts(at as *const u8, needle.len());
        let found = bytes == needle.as_bytes();
        libc::shmdt(at as *const libc::c_void);
        if found {
            Outcome::Succeeded(format!("attached segment {id} and read the secret"))
        } else {
            blocked_no_errno(format!("segment {id} does not hold the secret"))
        }
    }
}

fn sysv_msgsnd(key: libc::key_t) -> Outcome {
    #[repr(C)]
    struct Message {
        kind: libc::c_long,
        text: [u8; 8],
    }
    // SAFETY: raw msgget/msgsnd with a valid message buffer.
    unsafe {
        let id = libc::syscall(libc::SYS_msgget, key, 0);
        if id == -1 {
            return blocked(Error::last_os_error(), format!("msgget({key:#x})"));
        }
        let message = Message {
            kind: 1,
            text: *b"escaped\0",
        };
        let rc = libc::syscall(
            libc::SYS_msgsnd,
            id,
            &message as *const Message,
            8usize,
            libc::IPC_NOWAIT,
        );
        match check(rc) {
            Ok(_) => Outcome::Succeeded(format!("sent a message to queue {id} (key {key:#x})")),
            Err(e) => blocked(e, format!("msgsnd to queue {id}")),
        }
    }
}

fn posix_mq(name: &str) -> Outcome {
    let c = cstr(name);
    // SAFETY: mq_open without O_CREAT takes no further arguments.
    let mq = unsafe { libc::mq_open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK) };
    if mq == -1 {
        return blocked(Error::last_os_error(), format!("mq_open({name})"));
    }
    // SAFETY: sends a static buffer on our queue descriptor, then closes it.
    let rc = unsafe {
        let rc = libc::mq_send(mq, b"escaped".as_ptr().cast(), 7, 0);
        libc::mq_close(mq);
        rc
    };
    match check(rc as _) {
        Ok(_) => Outcome::Succeeded(format!("sent a message to the host queue {name}")),
        Err(e) => blocked(e, format!("mq_send to {name}")),
    }
}
