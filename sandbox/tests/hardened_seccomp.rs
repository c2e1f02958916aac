//! What the hardened profile's seccomp filter closes around Landlock, with no namespaces to
//! hide the host: metadata writes on paths outside the roots (Landlock up to ABI 7 does not
//! govern `chmod`, `chown`, `utimes` or `setxattr`), the resource limits of host processes
//! (`prlimit64`), and SysV IPC objects of host processes (an id guessed for `shmat` needs no
//! key). Each attack first works on the bare host, then is blocked in both profiles, as root
//! and as uid 65534, and the host object is checked afterwards. What stays open must be
//! disclosed by the report, never called exact: the last test holds that.

mod common;

use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use common::bait::Victim;
use common::{binaries, escape, probe, run_with_timeout, users, Attempt, Mode, Profile, Scenario};

/// The usual policy without any write root: the tool writes only its scratch space.
fn no_write_roots(s: &Scenario) -> String {
    let policy = s.base_policy();
    let write_line = format!("write = [\"{}/**\"]\n", s.path("work"));
    assert!(policy.contains(&write_line), "{policy}");
    policy.replace(&write_line, "")
}

fn cstring(path: &str) -> CString {
    CString::new(Path::new(path).as_os_str().as_bytes()).unwrap()
}

/// Host check: `path` has `mode`.
fn mode_is(path: &str, mode: u32) -> impl Fn() -> Result<(), String> + 'static {
    let path = path.to_string();
    move || match fs::metadata(&path) {
        Ok(m) if m.mode() & 0o7777 == mode => Ok(()),
        Ok(m) => Err(format!("{path} now has mode {:o}", m.mode() & 0o7777)),
        Err(e) => Err(format!("{path}: {e}")),
    }
}

fn set_mode(path: &str, mode: u32) -> impl Fn() + 'static {
    let path = path.to_string();
    move || fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap()
}

#[test]
fn metadata_writes_outside_the_roots_are_refused_without_write_roots() {
    escape("chmod 777 of a host file in no root", |s| {
        let path = s.path("outside/file");
        Some(
            Attempt::new(&["chmod", "777", &path], no_write_roots(s))
                .reset(set_mode(&path, 0o644))
                .no_trace(mode_is(&path, 0o644)),
        )
    });
    escape("fchmod 777 of a file in the read root", |s| {
        let path = s.path("data/file");
        Some(
            Attempt::new(&["fchmod", "777", &path], no_write_roots(s))
                .reset(set_mode(&path, 0o644))
                .no_trace(mode_is(&path, 0o644)),
        )
    });
    escape("utimes of a host file in no root", |s| {
        let path = s.path("outside/file");
        let (check, reset) = (path.clone(), cstring(&path));
        Some(
            Attempt::new(&["utimes", &path, "12345"], no_write_roots(s))
                // SAFETY: utimensat to now (null times) with a valid path.
                .reset(move || unsafe {
                    libc::utimensat(libc::AT_FDCWD, reset.as_ptr(), std::ptr::null(), 0);
                })
                .no_trace(move || match fs::metadata(&check).map(|m| m.mtime()) {
                    Ok(12345) => Err(format!("{check} got the tool's timestamp")),
                    _ => Ok(()),
                }),
        )
    });
    escape("chown of a host file in no root to its own owner", |s| {
        let path = s.path("outside/file");
        // A chown, even to the same owner, sets the change time: it must not move.
        let ctime = Rc::new(Cell::new((0i64, 0i64)));
        let ctime_of = |p: &str| {
            fs::metadata(p)
                .map(|m| (m.ctime(), m.ctime_nsec()))
                .unwrap()
        };
        let (record, check, p1, p2) = (ctime.clone(), ctime, path.clone(), path.clone());
        Some(
            Attempt::new(&["chown-self", &path], no_write_roots(s))
                .reset(move || record.set(ctime_of(&p1)))
                .no_trace(move || match ctime_of(&p2) == check.get() {
                    true => Ok(()),
                    false => Err(format!("{p2} was changed (its ctime moved)")),
                }),
        )
    });
    escape("setxattr user.* on a host file in no root", |s| {
        let path = s.path("outside/file");
        let (reset_path, check_path) = (cstring(&path), cstring(&path));
        let name = CString::new("user.toolpolicy").unwrap();
        let check_name = name.clone();
        Some(
            Attempt::new(
                &["setxattr", &path, "user.toolpolicy", "41"],
                no_write_roots(s),
            )
            // SAFETY: removexattr with valid strings.
            .reset(move || unsafe {
                libc::removexattr(reset_path.as_ptr(), name.as_ptr());
            })
            .no_trace(move || {
                // SAFETY: a size query with valid strings.
                let size = unsafe {
                    libc::getxattr(
                        check_path.as_ptr(),
                        check_name.as_ptr(),
                        std::ptr::null_mut(),
                        0,
                    )
                };
                if size < 0 {
                    Ok(())
                } else {
                    Err("the host file carries the tool's xattr".into())
                }
            }),
        )
    });
}

/// `policy-sandbox run --report --profile hardened` of the probe: (report JSON, result line).
fn hardened_with_report(
    user: common::User,
    s: &Scenario,
    policy: &str,
    args: &[&str],
) -> (serde_json::Value, String) {
    let policy = s.policy("policy", policy);
    let mut argv = user.prefix();
    argv.extend(
        [
            binaries().sandbox.to_str().unwrap(),
            "run",
            "--report",
            "--policy",
            policy.to_str().unwrap(),
            "--profile",
            "hardened",
            "--",
            binaries().probe.to_str().unwrap(),
        ]
        .map(String::from),
    );
    argv.extend(args.iter().map(|a| a.to_string()));
    let report = run_with_timeout(&argv, Duration::from_secs(60));
    let json = report
        .stderr
        .lines()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .unwrap_or_else(|| panic!("no report on stderr:\n{}", report.stderr));
    (json, report.result_line().unwrap_or_default().to_string())
}

/// The status and `to` of the first report rule starting with `prefix`.
fn rule(report: &serde_json::Value, prefix: &str) -> (String, String) {
    let rule = report["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"].as_str().unwrap_or_default().starts_with(prefix))
        .unwrap_or_else(|| panic!("no rule {prefix} in {report:#}"));
    (
        rule["status"].as_str().unwrap_or_default().to_string(),
        rule["to"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn what_stays_open_in_hardened_is_reported_widened() {
    for user in users() {
        let s = Scenario::new(user);
        let label = format!("[as {}]", user.name());
        // With a write root the filter must let chmod through, and it reaches host files.
        let path = s.path("outside/file");
        let (report, line) =
            hardened_with_report(user, &s, &s.base_policy(), &["chmod", "600", &path]);
        let (status, to) = rule(&report, "fs.write ");
        if user == common::User::Root {
            // A root runner's uid owns the system's files: its tool changes no metadata at all,
            // write roots or not, and fs.write stays exact.
            assert!(line.starts_with("BLOCKED "), "{label} {line}");
            assert_eq!(status, "exact", "{label} {report:#}");
        } else {
            assert!(
                line.starts_with("SUCCEEDED "),
                "{label} the hole this test is about: {line}"
            );
            assert_eq!(status, "widened", "{label} {report:#}");
            assert!(to.contains("chmod"), "{label} {to}");
        }
        // stat of a host path in no root works in every hardened run: fs.read says so.
        let (status, to) = rule(&report, "fs.read ");
        assert_eq!(status, "widened", "{label} {report:#}");
        assert!(to.contains("stat"), "{label} {to}");
        // Without write roots the same chmod is refused, and fs.write is exact again.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let (report, line) =
            hardened_with_report(user, &s, &no_write_roots(&s), &["chmod", "600", &path]);
        assert!(line.starts_with("BLOCKED "), "{label} {line}");
        let (status, _) = rule(&report, "fs.write ");
        assert_eq!(status, "exact", "{label} {report:#}");
    }
}

/// The soft RLIMIT_MSGQUEUE of `pid`, from `/proc/PID/limits`.
fn msgqueue_limit(pid: u32) -> Option<String> {
    let limits = fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max msgqueue size"))?;
    line.split_whitespace().nth(3).map(String::from)
}

#[test]
fn resource_limits_of_host_processes_cannot_be_changed() {
    escape("prlimit64 on a host process of the same user", |s| {
        let user = s.user;
        let victim = Rc::new(RefCell::new(Victim::start(user, "not-the-point")));
        let (respawn, current, check) = (victim.clone(), victim.clone(), victim);
        Some(
            Attempt::new(&[], s.base_policy())
                // The bare run lowered the victim's limit for good: start a fresh one.
                .reset(move || *respawn.borrow_mut() = Victim::start(user, "not-the-point"))
                .args(move || vec!["prlimit".into(), current.borrow().pid().to_string()])
                .no_trace(move || {
                    let pid = check.borrow().pid();
                    match msgqueue_limit(pid).as_deref() {
                        Some("4096") => Err(format!("the limit of host pid {pid} was lowered")),
                        Some(_) => Ok(()),
                        None => Err(format!("host pid {pid} is gone")),
                    }
                }),
        )
    });
    // The tool's own limits stay its own to change (glibc's setrlimit is prlimit64(0, ...)).
    for user in users() {
        for profile in Profile::available() {
            let s = Scenario::new(user);
            let policy = s.policy("policy", &s.base_policy());
            let report = probe(user, Mode::Sandboxed(&policy, profile), &["prlimit", "0"]);
            let line = report.result_line().unwrap_or_default();
            assert!(
                line.starts_with("SUCCEEDED "),
                "[as {}, {}] {line}",
                user.name(),
                profile.name()
            );
        }
    }
}

/// A SysV object of the test, removed on drop.
struct SysvObject {
    id: libc::c_int,
    shm: bool,
}

impl Drop for SysvObject {
    fn drop(&mut self) {
        // SAFETY: IPC_RMID of our own object.
        unsafe {
            if self.shm {
                libc::shmctl(self.id, libc::IPC_RMID, std::ptr::null_mut());
            } else {
                libc::msgctl(self.id, libc::IPC_RMID, std::ptr::null_mut());
            }
        }
    }
}

/// A world-accessible shared memory segment (no key) holding `secret`.
fn host_segment(secret: &str) -> SysvObject {
    // SAFETY: a fresh private segment, attached, written, detached.
    unsafe {
        let id = libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o666);
        assert!(id >= 0, "shmget: {}", std::io::Error::last_os_error());
        let at = libc::shmat(id, std::ptr::null(), 0);
        assert!(
            at as isize != -1,
            "shmat: {}",
            std::io::Error::last_os_error()
        );
        std::ptr::copy_nonoverlapping(secret.as_ptr(), at.cast::<u8>(), secret.len());
        libc::shmdt(at);
        SysvObject { id, shm: true }
    }
}

/// A world-writable message queue under a fresh key.
fn host_queue() -> (libc::key_t, SysvObject) {
    for n in 0..1000 {
        let key = (0x7470_0000 ^ (std::process::id() << 10) ^ n) as libc::key_t;
        // SAFETY: msgget with an exclusive create.
        let id = unsafe { libc::msgget(key, libc::IPC_CREAT | libc::IPC_EXCL | 0o666) };
        if id >= 0 {
            return (key, SysvObject { id, shm: false });
        }
    }
    panic!("no free SysV message queue key");
}

fn queued_messages(id: libc::c_int) -> u64 {
    // SAFETY: IPC_STAT into a zeroed struct.
    unsafe {
        let mut ds: libc::msqid_ds = std::mem::zeroed();
        libc::msgctl(id, libc::IPC_STAT, &mut ds);
        ds.msg_qnum as u64
    }
}

fn drain(id: libc::c_int) {
    let mut buf = [0u8; 64];
    // SAFETY: msgrcv into a live buffer, without waiting.
    while unsafe { libc::msgrcv(id, buf.as_mut_ptr().cast(), 32, 0, libc::IPC_NOWAIT) } >= 0 {}
}

#[test]
fn sysv_ipc_objects_of_the_host_are_out_of_reach() {
    escape("shmat of a host segment by a guessed id (no key)", |s| {
        let secret = format!("sysv-secret-{}", std::process::id());
        let segment = Rc::new(host_segment(&secret));
        let id = segment.id.to_string();
        Some(
            Attempt::new(&["sysv-shmat", &id, &secret], s.base_policy()).no_trace(move || {
                // Keeps the segment alive until the attempt is dropped.
                let _ = &segment;
                Ok(())
            }),
        )
    });
    escape("msgsnd to a host message queue", |s| {
        let (key, queue) = host_queue();
        let queue = Rc::new(queue);
        let (reset, check) = (queue.clone(), queue);
        Some(
            Attempt::new(&["sysv-msgsnd", &key.to_string()], s.base_policy())
                .reset(move || drain(reset.id))
                .no_trace(move || match queued_messages(check.id) {
                    0 => Ok(()),
                    n => Err(format!("the host queue holds {n} message(s) from the tool")),
                }),
        )
    });
}

/// A world-writable POSIX message queue of the host, removed on drop.
struct HostQueue {
    name: CString,
    mq: libc::mqd_t,
}

impl HostQueue {
    fn create() -> HostQueue {
        let name = CString::new(format!("/toolpolicy-test-{}", std::process::id())).unwrap();
        // SAFETY: mq_open with O_CREAT takes a mode and a null attribute pointer.
        let mq = unsafe {
            libc::mq_unlink(name.as_ptr());
            libc::mq_open(
                name.as_ptr(),
                libc::O_CREAT | libc::O_RDWR | libc::O_NONBLOCK,
                0o666,
                std::ptr::null_mut::<libc::mq_attr>(),
            )
        };
        assert!(mq != -1, "mq_open: {}", std::io::Error::last_os_error());
        // The umask took the world's write bit; give it back (an mqueue descriptor is a file).
        // SAFETY: fchmod on our queue descriptor.
        unsafe { libc::fchmod(mq, 0o666) };
        HostQueue { name, mq }
    }

    fn messages(&self) -> i64 {
        // SAFETY: mq_getattr into a zeroed struct.
        unsafe {
            let mut attr: libc::mq_attr = std::mem::zeroed();
            libc::mq_getattr(self.mq, &mut attr);
            attr.mq_curmsgs
        }
    }

    fn drain(&self) {
        let mut buf = vec![0u8; 16384];
        // SAFETY: receives into a buffer of at least mq_msgsize bytes, without waiting.
        while unsafe {
            libc::mq_receive(
                self.mq,
                buf.as_mut_ptr().cast(),
                buf.len(),
                std::ptr::null_mut(),
            )
        } >= 0
        {}
    }
}

impl Drop for HostQueue {
    fn drop(&mut self) {
        // SAFETY: closing and unlinking our own queue.
        unsafe {
            libc::mq_close(self.mq);
            libc::mq_unlink(self.name.as_ptr());
        }
    }
}

#[test]
fn posix_message_queues_of_the_host_are_out_of_reach() {
    escape("mq_send to a host POSIX message queue", |s| {
        let queue = Rc::new(HostQueue::create());
        let name = queue.name.to_str().unwrap().to_string();
        let (reset, check) = (queue.clone(), queue);
        Some(
            Attempt::new(&["posix-mq", &name], s.base_policy())
                .reset(move || reset.drain())
                .no_trace(move || match check.messages() {
                    0 => Ok(()),
                    n => Err(format!("the host queue holds {n} message(s) from the tool")),
                }),
        )
    });
}
