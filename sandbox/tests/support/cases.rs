//! A harness for test binaries whose cases each need a process of their own (single-threaded,
//! or owning process-wide state such as a zygote or a confinement): the binary runs without
//! libtest and re-executes itself once per case. Shared with `#[path]`.

#![allow(dead_code)] // each includer uses part of it

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// One case: it gets its own directory and says what failed.
pub type Case = fn(&Path) -> Result<(), String>;

/// In a process started for one case (`case_var` names it, `dir_var` its directory): runs it,
/// looked up among `cases` and then `roles` (processes a case starts that are not tests), and
/// gives the exit code. `None` in the process that runs the whole suite.
pub fn in_case_process(
    case_var: &str,
    dir_var: &str,
    cases: &[(&str, Case)],
    roles: &[(&str, Case)],
) -> Option<ExitCode> {
    let name = std::env::var(case_var).ok()?;
    let dir = PathBuf::from(std::env::var(dir_var).expect("case directory"));
    let case = cases
        .iter()
        .chain(roles)
        .find(|(n, _)| *n == name)
        .expect("known case")
        .1;
    Some(match case(&dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("FAIL ({name}): {e}");
            ExitCode::FAILURE
        }
    })
}

/// The suite, with libtest's `--list` and name filter: `ready` decides (after the listing)
/// whether this host can run the cases at all (it prints why not), and `run` runs one case,
/// giving a labelled result per pass (e.g. one per user).
pub fn run_suite(
    cases: &[(&str, Case)],
    ready: impl FnOnce() -> bool,
    mut run: impl FnMut(&str) -> Vec<(String, Result<(), String>)>,
) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in cases {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let filter = args.iter().find(|a| !a.starts_with('-'));
    if !ready() {
        return ExitCode::SUCCESS;
    }
    let mut failed = 0;
    for (name, _) in cases {
        if filter.is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        for (label, result) in run(name) {
            match result {
                Ok(()) => println!("test {label} ... ok"),
                Err(e) => {
                    println!("test {label} ... FAILED\n{e}");
                    failed += 1;
                }
            }
        }
    }
    if failed > 0 {
        println!("{failed} failed");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// This binary as case or role `name` (`case_var` names it) in `dir` (`dir_var`), for the
/// caller to start.
pub fn process_of(
    case_var: &str,
    dir_var: &str,
    name: &str,
    dir: &std::path::Path,
) -> std::process::Command {
    let mut command =
        std::process::Command::new(std::env::current_exe().expect("this test binary's path"));
    command.env(case_var, name).env(dir_var, dir);
    command
}

/// Runs case `name` in a new process of this binary (`case_var` names it, `dir_var` gives it a
/// new temporary directory): its output when it fails.
pub fn in_new_process(case_var: &str, dir_var: &str, name: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = process_of(case_var, dir_var, name, dir.path())
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        // A case that skipped itself, or a part of itself, printed why on its stderr, which a
        // passing case's output would otherwise hide.
        for line in String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.starts_with("skipped") || l.starts_with("note:"))
        {
            println!("{name}: {line}");
        }
        Ok(())
    } else {
        Err(format!(
            "stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The whole `main` of a suite whose cases each run in a process of their own (one pass each):
/// a case process runs its case, the suite process lists or runs them when `ready`.
pub fn main_one_process_each(
    case_var: &str,
    dir_var: &str,
    cases: &[(&str, Case)],
    roles: &[(&str, Case)],
    ready: impl Fn() -> bool,
) -> ExitCode {
    if let Some(code) = in_case_process(case_var, dir_var, cases, roles) {
        return code;
    }
    run_suite(cases, ready, |name| {
        vec![(name.to_string(), in_new_process(case_var, dir_var, name))]
    })
}

/// `Err(what)` unless `ok`: a case's failed expectation.
/// Drops this case process's every id to uid and gid 65534 (nobody), with no supplementary
/// group: the unprivileged runner of the cases that need one. The case process must be
/// single-threaded, and root.
pub fn become_nobody() -> Result<(), String> {
    // SAFETY: id changes of this single-threaded process, every one at once.
    let dropped = unsafe {
        libc::setgroups(0, std::ptr::null()) == 0
            && libc::setresgid(65534, 65534, 65534) == 0
            && libc::setresuid(65534, 65534, 65534) == 0
    };
    check(
        &format!(
            "dropping root for uid 65534: {}",
            std::io::Error::last_os_error()
        ),
        dropped,
    )
}

pub fn check(what: &str, ok: bool) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what.to_string())
    }
}
