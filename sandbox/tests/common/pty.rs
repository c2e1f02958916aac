//! A pseudo-terminal as the controlling terminal of the command under test, to try `TIOCSTI`
//! keystroke injection into the caller's terminal.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{probe_argv, wait_with_timeout, Mode, Report, User};

/// Runs the probe with a fresh pty as stdin and controlling terminal (in a new session, like a
/// shell's job). Returns the report and whatever reached the terminal's input queue, i.e. what a
/// shell reading that terminal would run next.
pub fn probe_on_pty(user: User, mode: Mode<'_>, args: &[&str]) -> (Report, String) {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty fills two fds; name, termios and winsize may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both fds were just created and are owned here.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let argv = probe_argv(user, mode, args);
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .stdin(Stdio::from(slave.try_clone().unwrap()));
    // SAFETY: setsid and ioctl are async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let report = wait_with_timeout(command, Duration::from_secs(90));
    // The injected bytes sit in the input queue: read it from the slave without blocking.
    // SAFETY: switches our own fd to non-blocking and non-canonical reads.
    unsafe {
        let mut tio: libc::termios = std::mem::zeroed();
        libc::tcgetattr(slave.as_raw_fd(), &mut tio);
        tio.c_lflag &= !libc::ICANON;
        tio.c_cc[libc::VMIN] = 0;
        tio.c_cc[libc::VTIME] = 0;
        libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &tio);
    }
    let mut input = Vec::new();
    let _ = File::from(slave).read_to_end(&mut input);
    drop(master);
    (report, String::from_utf8_lossy(&input).into_owned())
}
