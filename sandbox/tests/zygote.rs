//! The hardened profile's zygote (`sandbox::zygote`) against the real kernel: its lifetime, its
//! failures and its users, each with real processes.
//!
//! Each case runs in a fresh process of this binary (no libtest harness: some cases need a
//! single-threaded process, and each needs a zygote of its own), re-executed with the case's
//! name. Missing kernel features print a reason and skip, unless `TOOLPOLICY_REQUIRE_KERNEL=1`.

#[path = "support/cases.rs"]
mod cases;
#[path = "support/kernel.rs"]
mod kernel;
#[path = "support/mounts.rs"]
mod mounts;

use mounts::mount;

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use policy_runtime::ToolPolicy;
use sandbox::request::SetUpStep;
use sandbox::runner::{run, RunError, RunOptions, RunOutput};
use sandbox::{zygote, Profile};

const HELPER: &str = env!("CARGO_BIN_EXE_policy-sandbox");
const CASE_VAR: &str = "ZYGOTE_CASE";
const DIR_VAR: &str = "ZYGOTE_DIR";
/// Set for the agent role: fork a child that lives on (without `exec`) before the long run.
const FORK_VAR: &str = "ZYGOTE_AGENT_FORKS";

use cases::{check, Case};

const CASES: &[(&str, Case)] = &[
    (
        "runs_from_many_threads_get_their_own_output_and_status",
        runs_from_many_threads,
    ),
    (
        "a_first_run_from_a_thread_that_ends_leaves_the_zygote_serving",
        first_run_from_a_thread_that_ends,
    ),
    (
        "the_agent_killed_mid_run_leaves_no_command_orphan_or_zygote",
        agent_killed_mid_run,
    ),
    (
        "the_agent_killed_while_a_forked_child_of_it_lives_still_ends_its_zygote",
        agent_with_a_forked_child_killed_mid_run,
    ),
    (
        "the_command_killed_from_outside_takes_its_orphans_with_it",
        orphans_of_a_killed_command,
    ),
    (
        "a_daemon_the_command_double_forks_is_dead_when_the_run_returns",
        double_forked_daemon,
    ),
    (
        "a_daemon_that_tries_setsid_or_setpgid_is_refused_and_dies_with_the_run",
        daemon_leaving_its_group,
    ),
    (
        "a_timeout_kills_a_grandchild_that_ignores_sigterm",
        timeout_kills_a_stubborn_grandchild,
    ),
    (
        "concurrent_runs_with_different_timeouts_each_end_on_their_own",
        concurrent_timeouts,
    ),
    (
        "exec_supervision_serves_several_runs_at_once",
        concurrent_exec_supervision,
    ),
    (
        "a_zygote_killed_between_runs_is_replaced_and_reaped",
        killed_between_runs,
    ),
    (
        "a_zygote_killed_during_a_run_fails_that_run_clearly_and_its_daemon_dies",
        killed_during_a_run,
    ),
    (
        "confine_self_ends_the_unconfined_zygote",
        confine_self_ends_the_zygote,
    ),
    (
        "a_forked_child_runs_through_its_own_zygote",
        forked_child_has_its_own,
    ),
    (
        "a_zygote_started_as_root_never_serves_an_agent_that_dropped_root",
        dropped_root_gets_a_new_zygote,
    ),
    (
        "the_command_holds_no_descriptor_but_its_standard_streams",
        command_holds_only_its_stdio,
    ),
    (
        "helper_cpu_counts_what_the_command_burned",
        helper_cpu_counts_the_command,
    ),
    (
        "the_command_cannot_signal_the_zygote_or_the_agent",
        command_cannot_signal_its_helpers,
    ),
    (
        "each_program_gets_a_zygote_that_runs_under_it_and_its_commands_inherit_it",
        zygote_per_program,
    ),
    (
        "a_request_too_large_for_its_message_travels_on_a_pipe",
        request_on_a_pipe,
    ),
    (
        "a_request_the_zygote_refuses_comes_back_as_its_refusal_and_it_serves_on",
        request_refused_by_the_zygote,
    ),
    (
        "a_run_after_the_agent_changed_its_umask_has_the_new_one",
        umask_follows_the_agent,
    ),
    (
        "a_run_after_the_agent_lowered_its_limits_has_the_new_ones",
        lowered_limits_follow_the_agent,
    ),
    (
        "a_run_after_the_agent_changed_its_nice_value_or_cpu_affinity_has_the_new_ones",
        scheduling_follows_the_agent,
    ),
    (
        "a_run_after_the_agent_changed_its_scheduling_policy_has_the_new_one",
        policy_follows_the_agent,
    ),
    (
        "a_run_after_the_agent_changed_its_io_priority_or_oom_score_has_the_new_ones",
        io_priority_and_oom_score_follow_the_agent,
    ),
    (
        "a_run_from_an_agent_that_ignores_sigchld_or_reaps_every_child_has_its_status",
        status_survives_the_agents_sigchld,
    ),
    (
        "the_command_starts_with_no_signal_ignored_whatever_the_agent_and_the_zygote_ignore",
        no_signal_ignored,
    ),
    (
        "a_run_after_the_agent_changed_its_personality_has_the_new_one",
        personality_follows_the_agent,
    ),
    (
        "a_run_after_the_agent_changed_its_timer_slack_has_the_new_one",
        timer_slack_follows_the_agent,
    ),
    (
        "a_zygote_started_with_a_group_never_serves_an_agent_that_dropped_it",
        dropped_group_gets_a_new_zygote,
    ),
    (
        "a_run_after_the_agent_raised_a_hard_limit_has_it_through_a_new_zygote",
        raised_hard_limit_follows_the_agent,
    ),
    (
        "a_run_after_the_agent_moved_to_another_cgroup_runs_there_and_the_run_in_flight_ends_well",
        cgroup_follows_the_agent,
    ),
    (
        "a_policy_limit_above_the_agents_lowered_hard_limit_is_a_typed_refusal_in_both_profiles",
        limit_above_the_agents_is_refused,
    ),
    (
        "a_program_the_kernel_refuses_the_zygote_leaves_the_command_unrun",
        program_refused_by_the_kernel,
    ),
    (
        "a_zygote_never_serves_an_agent_that_added_a_seccomp_filter",
        added_filter_gets_a_new_zygote,
    ),
    (
        "a_zygote_never_serves_an_agent_that_entered_a_landlock_domain",
        landlock_domain_gets_a_new_zygote,
    ),
    (
        "a_zygote_never_serves_an_agent_that_entered_a_landlock_domain_under_a_filter_refusing_kcmp",
        landlock_domain_without_kcmp_gets_a_new_zygote,
    ),
    (
        "a_zygote_never_serves_an_agent_that_cannot_count_its_filters_and_added_one",
        uncounted_filter_gets_a_new_zygote,
    ),
    (
        "a_zygote_never_serves_an_agent_that_cannot_name_its_namespaces_and_entered_one",
        unnamed_network_namespace_gets_a_new_zygote,
    ),
    (
        "a_zygote_never_serves_an_agent_that_entered_another_network_namespace",
        network_namespace_gets_a_new_zygote,
    ),
    (
        "a_zygote_never_serves_an_agent_that_entered_another_mount_namespace_or_root",
        mount_namespace_and_root_get_a_new_zygote,
    ),
    (
        "a_run_after_the_agent_asked_for_a_new_pid_namespace_runs_in_it",
        pid_namespace_gets_a_new_zygote,
    ),
    (
        "an_unprivileged_agent_that_adds_a_filter_or_a_landlock_domain_gets_a_new_zygote",
        unprivileged_agent_confining_itself,
    ),
    (
        "a_zygote_never_serves_an_agent_that_denied_itself_writable_executable_memory",
        memory_deny_write_execute_gets_a_new_zygote,
    ),
    (
        "a_run_after_the_agent_changed_its_address_space_flags_has_them_through_a_new_zygote",
        memory_flags_get_a_new_zygote,
    ),
    (
        "a_run_after_the_agent_narrowed_its_core_dump_filter_has_it_through_a_new_zygote",
        dump_filter_follows_the_agent,
    ),
    (
        "a_run_after_the_agent_disabled_speculative_store_bypass_has_it_disabled",
        speculation_mitigation_follows_the_agent,
    ),
    (
        "a_run_after_the_agent_bound_its_memory_to_numa_nodes_has_the_binding",
        numa_policy_follows_the_agent,
    ),
    (
        "a_run_after_the_agent_left_its_session_is_in_the_new_one",
        session_follows_the_agent,
    ),
    (
        "a_run_after_the_agent_set_its_login_uid_is_audited_under_it",
        login_uid_follows_the_agent,
    ),
    (
        "a_run_whose_group_cannot_be_emptied_ends_after_the_drain_limit_and_its_scratch_is_not_reused",
        undrained_group_taints_its_scratch,
    ),
    (
        "a_one_shot_caller_forks_its_zygote_only_while_it_is_small",
        one_shot_fork_only_while_small,
    ),
    (
        "a_forked_zygote_runs_none_of_its_callers_exit_handlers",
        forked_zygote_skips_exit_handlers,
    ),
    (
        "a_forked_zygote_runs_none_of_its_callers_signal_handlers",
        forked_zygote_drops_signal_handlers,
    ),
];

/// Not a test: the agent process [`agent_killed_mid_run`] starts and kills.
const AGENT_ROLE: &str = "agent_role";
/// Not a test: the one-shot caller [`forked_zygote_skips_exit_handlers`] starts.
const ONE_SHOT_ROLE: &str = "one_shot_role";

fn main() -> ExitCode {
    let roles: &[(&str, Case)] = &[(AGENT_ROLE, agent_role), (ONE_SHOT_ROLE, one_shot_role)];
    cases::main_one_process_each(CASE_VAR, DIR_VAR, CASES, roles, || {
        kernel::supports(Profile::Hardened)
    })
}

// ---- helpers of the case processes ----

fn policy_writing(dir: &Path) -> ToolPolicy {
    ToolPolicy::from_json_str(
        "case",
        &format!(r#"{{"fs": {{"write": ["{}/**"]}}}}"#, dir.display()),
    )
    .expect("valid policy")
}

fn hardened() -> RunOptions {
    RunOptions::default()
        .helper(HELPER)
        .profile(Profile::Hardened)
}

fn sh(script: &str) -> Vec<OsString> {
    vec!["/bin/sh".into(), "-c".into(), script.into()]
}

fn run_sh(dir: &Path, script: &str) -> Result<RunOutput, RunError> {
    run(&policy_writing(dir), &sh(script), &hardened())
}

/// A policy writing `dir`, with more TOML after the `[fs]` table (e.g. `[limits]`), or before
/// it (`exec = "deny"`).
fn policy_toml(dir: &Path, before: &str, after: &str) -> ToolPolicy {
    let toml = format!(
        "{before}\n[fs]\nwrite = [\"{}/**\"]\n{after}\n",
        dir.display()
    );
    ToolPolicy::from_toml_str("case.toml", &toml).expect("valid policy")
}

/// The same script unconfined, as this process's child (the controls).
fn run_unconfined(script: &str) -> Result<std::process::Output, String> {
    Command::new("/bin/sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())
}

/// The trimmed standard output of `script` unconfined, as this process's child (the control).
fn unconfined_output(script: &str) -> Result<String, String> {
    let out = run_unconfined(script)?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Checks that a strict run of `script`, whose command is a clone of this thread, prints
/// `want` too (where the host has user namespaces; `what` names the value).
fn strict_prints(dir: &Path, script: &str, want: &str, what: &str) -> Result<(), String> {
    if !kernel::user_namespaces() {
        return Ok(());
    }
    let strict = RunOptions::default().profile(Profile::Strict);
    let out = run(&policy_writing(dir), &sh(script), &strict).map_err(|e| e.to_string())?;
    let seen = String::from_utf8_lossy(&out.stdout).trim().to_string();
    check(
        &format!("a strict run reports the same {what}, {want:?}: {seen:?}"),
        out.success() && seen == want,
    )
}

/// The session id field of `/proc/PID/stat`.
fn session_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()
}

/// A daemon's note: its pid and what it says (`"pid words"`).
fn read_note(path: &Path, limit: Duration) -> Result<(u32, String), String> {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Some((pid, rest)) = text.trim().split_once(' ') {
                if let Ok(pid) = pid.parse() {
                    return Ok((pid, rest.to_string()));
                }
            }
        }
        if start.elapsed() > limit {
            return Err(format!("{} was not written", path.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn echo(dir: &Path, word: &str) -> Result<(), String> {
    let out = run_sh(dir, &format!("echo {word}")).map_err(|e| e.to_string())?;
    check(
        &format!("echo {word}: {out:?}"),
        out.success() && out.stdout == format!("{word}\n").as_bytes(),
    )
}

fn zygote_pid() -> Result<u32, String> {
    zygote::running(Path::new(HELPER)).ok_or_else(|| "no zygote is running".to_string())
}

/// The state letter of `/proc/PID/stat`, `None` when the process is gone.
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Gone: no such process, or only its zombie waiting for whoever reaps it.
fn gone(pid: u32) -> bool {
    matches!(state(pid), None | Some('Z' | 'X'))
}

fn gone_within(pid: u32, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    gone(pid)
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn status_field(pid: u32, field: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .map(|v| v.trim().to_string())
}

fn read_pid(path: &Path, limit: Duration) -> Result<u32, String> {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return Ok(pid);
        }
        if start.elapsed() > limit {
            return Err(format!("{} was not written", path.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill(pid: u32) {
    // SAFETY: signalling a process of this test.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

// ---- the cases ----

/// Four threads, eight runs each, at once: every run gets its own output, exit code and CPU
/// figure, through one zygote.
fn runs_from_many_threads(dir: &Path) -> Result<(), String> {
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let dir = dir.to_path_buf();
            std::thread::spawn(move || -> Result<(), String> {
                for i in 0..8 {
                    let code = (t * 8 + i) % 7;
                    let out = run_sh(
                        &dir,
                        &format!("echo out-{t}-{i}; echo err-{t}-{i} >&2; exit {code}"),
                    )
                    .map_err(|e| e.to_string())?;
                    check(
                        &format!("run {t}/{i}: {out:?}"),
                        out.stdout == format!("out-{t}-{i}\n").as_bytes()
                            && out.stderr == format!("err-{t}-{i}\n").as_bytes()
                            && out.code == Some(code)
                            && out.helper_cpu.is_some_and(|c| c > Duration::ZERO),
                    )?;
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join().map_err(|_| "a thread panicked".to_string())??;
    }
    let z = zygote_pid()?;
    check(
        "the zygote is this process's child",
        parent_of(z) == Some(std::process::id()),
    )
}

/// The first run comes from a thread that then ends: the zygote does not die with it (no
/// parent-death signal of that thread), and later runs from other threads use the same one.
fn first_run_from_a_thread_that_ends(dir: &Path) -> Result<(), String> {
    let first = dir.to_path_buf();
    std::thread::spawn(move || echo(&first, "first"))
        .join()
        .map_err(|_| "the first thread panicked".to_string())??;
    let z = zygote_pid()?;
    std::thread::sleep(Duration::from_millis(200));
    check("the zygote outlived the first thread", !gone(z))?;
    for t in 0..3 {
        let dir = dir.to_path_buf();
        std::thread::spawn(move || echo(&dir, &format!("later-{t}")))
            .join()
            .map_err(|_| "a later thread panicked".to_string())??;
    }
    check(
        "later runs used the same zygote",
        zygote_pid()? == z && !gone(z),
    )
}

/// Run by [`agent_killed_mid_run`] as the agent: a first run (which starts the zygote), the
/// zygote's pid written down, then a command that leaves an orphan and sleeps.
fn agent_role(dir: &Path) -> Result<(), String> {
    echo(dir, "warm")?;
    if std::env::var_os(FORK_VAR).is_some() {
        // SAFETY: this process is single-threaded; the child only sleeps and exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            std::thread::sleep(Duration::from_secs(60));
            // SAFETY: leaving the forked child.
            unsafe { libc::_exit(0) };
        }
        std::fs::write(dir.join("forked"), child.to_string()).map_err(|e| e.to_string())?;
    }
    std::fs::write(dir.join("zygote"), zygote_pid()?.to_string()).map_err(|e| e.to_string())?;
    let d = dir.display();
    let out = run_sh(
        dir,
        &format!("sleep 100 & echo $! > {d}/orphan; echo $$ > {d}/command; sleep 100"),
    );
    Err(format!("the long run returned: {out:?}"))
}

/// The agent killed with SIGKILL while its command runs: the command, the orphan it left and
/// the zygote are gone within seconds (they were alive just before: the control).
fn agent_killed_mid_run(dir: &Path) -> Result<(), String> {
    kill_agent_mid_run(dir, false)
}

/// The same while a child the agent forked (without `exec`) lives on: that child holds no
/// copy of the zygote's control socket, so the zygote still sees the agent's end.
fn agent_with_a_forked_child_killed_mid_run(dir: &Path) -> Result<(), String> {
    let outcome = kill_agent_mid_run(dir, true);
    if let Ok(forked) = read_pid(&dir.join("forked"), Duration::ZERO) {
        kill(forked);
    }
    outcome
}

fn kill_agent_mid_run(dir: &Path, forks: bool) -> Result<(), String> {
    let mut command = cases::process_of(CASE_VAR, DIR_VAR, AGENT_ROLE, dir);
    if forks {
        command.env(FORK_VAR, "1");
    }
    let mut agent = command
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let limit = Duration::from_secs(20);
    let pids = [
        ("zygote", read_pid(&dir.join("zygote"), limit)?),
        ("command", read_pid(&dir.join("command"), limit)?),
        ("orphan", read_pid(&dir.join("orphan"), limit)?),
    ];
    for (what, pid) in pids {
        check(&format!("the {what} ran before the kill"), !gone(pid))?;
    }
    if forks {
        let forked = read_pid(&dir.join("forked"), limit)?;
        check("the forked child lives", !gone(forked))?;
    }
    agent.kill().map_err(|e| e.to_string())?;
    agent.wait().map_err(|e| e.to_string())?;
    for (what, pid) in pids {
        check(
            &format!("the {what} (pid {pid}) outlived the killed agent"),
            gone_within(pid, Duration::from_secs(5)),
        )?;
    }
    Ok(())
}

/// The zygote killed from outside between runs: the next run works through a new one, and the
/// dead one was reaped (no zombie left).
fn killed_between_runs(dir: &Path) -> Result<(), String> {
    echo(dir, "before")?;
    let old = zygote_pid()?;
    kill(old);
    check("the zygote died", gone_within(old, Duration::from_secs(5)))?;
    echo(dir, "after")?;
    let new = zygote_pid()?;
    check("a new zygote serves", new != old && !gone(new))?;
    check("the dead zygote was reaped", state(old).is_none())
}

/// The zygote killed while a command runs that daemonized a grandchild (alive before the kill:
/// the control): that run fails with the helper error (never a made-up exit status), the
/// command dies with the zygote (parent-death signal), the daemon is killed by the client
/// through the command's pidfd (the zygote that would have is gone), and the next run works.
fn killed_during_a_run(dir: &Path) -> Result<(), String> {
    echo(dir, "warm")?;
    let z = zygote_pid()?;
    let d = dir.to_path_buf();
    let long = std::thread::spawn(move || {
        let started = Instant::now();
        let out = run_sh(
            &d,
            &format!(
                "(sleep 100 </dev/null >/dev/null 2>&1 & echo $! > {0}/daemon); \
                 echo $$ > {0}/command; sleep 30",
                d.display()
            ),
        );
        (out, started.elapsed())
    });
    let command = read_pid(&dir.join("command"), Duration::from_secs(20))?;
    let daemon = read_pid(&dir.join("daemon"), Duration::from_secs(20))?;
    check("the command ran", !gone(command))?;
    check("the daemon ran", !gone(daemon))?;
    kill(z);
    let (out, took) = long
        .join()
        .map_err(|_| "the run's thread panicked".to_string())?;
    match &out {
        Err(RunError::Helper(m)) if m.contains("ended during the run") => {}
        other => return Err(format!("expected the helper error, got {other:?}")),
    }
    check(
        &format!("the run ended at once ({took:?})"),
        took < Duration::from_secs(10),
    )?;
    check(
        "the command was killed with its zygote",
        gone_within(command, Duration::from_secs(5)),
    )?;
    check(
        "the daemon was killed when the run failed",
        gone_within(daemon, Duration::from_millis(500)),
    )?;
    echo(dir, "after")
}

/// A hardened run, then `confine_self`: the zygote started before (unconfined: the control) is
/// gone and reaped; the next hardened run starts a new one, which is confined like its parent.
fn confine_self_ends_the_zygote(dir: &Path) -> Result<(), String> {
    echo(dir, "before")?;
    let old = zygote_pid()?;
    // Unconfined but for the filter of the runs it serves (their shared program and their
    // tail, see `each_program_gets_a_zygote_that_runs_under_it`).
    check(
        "the first zygote runs under its runs' program and tail only",
        status_field(old, "Seccomp_filters:").as_deref() == Some("2"),
    )?;
    let tmp = std::env::temp_dir();
    let policy = ToolPolicy::from_json_str(
        "agent",
        &format!(
            r#"{{"fs": {{"read": ["/**"], "write": ["{}/**", "{}/**"]}}}}"#,
            dir.display(),
            tmp.display()
        ),
    )
    .expect("valid policy");
    // No protected paths: the write root covers the temporary directory, which may hold this
    // checkout (and its `.git`), and protected paths are not what this case is about.
    let none = policy_runtime::protected::ProtectedPaths::none();
    sandbox::confine::confine_self_with(&policy, Profile::Hardened, &none)
        .map_err(|e| e.to_string())?;
    check(
        "confine_self ended the unconfined zygote",
        zygote::running(Path::new(HELPER)).is_none() && state(old).is_none(),
    )?;
    // The hardened rules leave `/proc` readable (other processes' command lines stay open,
    // `HARDENED_LEAVES_OPEN`): the agent can still read what each run compares, and so is not
    // given a zygote per run (see `a_zygote_never_serves_an_agent_that_cannot_count_...`).
    check(
        "the confined agent still reads its own /proc status",
        std::fs::read("/proc/thread-self/status").is_ok(),
    )?;
    // The confinement's filter answers `openat2` with ENOSYS: the run's Landlock set-up must
    // open its rules' paths another way, and the run must still work.
    echo(dir, "after")?;
    let new = zygote_pid()?;
    echo(dir, "after again")?;
    check(
        "the runs after the confinement share one zygote",
        zygote_pid()? == new,
    )?;
    check(
        "the new zygote inherited the confinement, and runs under its runs' program and tail too",
        new != old
            && status_field(new, "Seccomp:").as_deref() == Some("2")
            && status_field(new, "Seccomp_filters:").as_deref() == Some("3")
            && status_field(new, "NoNewPrivs:").as_deref() == Some("1"),
    )
}

/// A child forked from the agent (no `exec`) runs a hardened tool through a zygote of its
/// own, whose parent it is; the parent's zygote is untouched, and the child's ends with it.
fn forked_child_has_its_own(dir: &Path) -> Result<(), String> {
    echo(dir, "parent")?;
    let parents = zygote_pid()?;
    let report = dir.join("child-zygote");
    // SAFETY: this case process is single-threaded; the child runs ordinary code and exits.
    let child = unsafe { libc::fork() };
    if child == 0 {
        let outcome = echo(dir, "child").and_then(|()| {
            let own = zygote_pid()?;
            check(
                "the child's zygote is its own child",
                own != parents && parent_of(own) == Some(std::process::id()),
            )?;
            std::fs::write(&report, own.to_string()).map_err(|e| e.to_string())
        });
        if let Err(e) = &outcome {
            eprintln!("in the forked child: {e}");
        }
        // SAFETY: leaving the forked child without running the parent's exit handlers.
        unsafe { libc::_exit(i32::from(outcome.is_err())) };
    }
    let mut status = 0;
    // SAFETY: waiting for our child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    check(
        "the forked child's run succeeded",
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    )?;
    let childs = read_pid(&report, Duration::from_secs(1))?;
    check(
        "the child's zygote ended with the child",
        gone_within(childs, Duration::from_secs(5)),
    )?;
    echo(dir, "parent-again")?;
    check(
        "the parent kept its zygote",
        zygote_pid()? == parents && !gone(parents),
    )
}

/// An agent that started its zygote as root, then dropped to uid 65534: its next run gets a
/// new zygote and runs as 65534 (the first run, as root, is the control); the old zygote,
/// which the agent may no longer signal, still ends and is reaped.
fn dropped_root_gets_a_new_zygote(dir: &Path) -> Result<(), String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (to drop it)");
        return Ok(());
    }
    let id = |dir: &Path| -> Result<String, String> {
        let out = run_sh(dir, "id -u").map_err(|e| e.to_string())?;
        check(&format!("id -u: {out:?}"), out.success())?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    check("the first run is root's", id(dir)? == "0")?;
    let old = zygote_pid()?;
    cases::become_nobody()?;
    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    check(
        "the run after dropping root is 65534's",
        id(scratch.path())? == "65534",
    )?;
    let new = zygote_pid()?;
    check(
        "the root zygote was ended and reaped",
        new != old && state(old).is_none(),
    )
}

/// The command killed from outside while an orphan it left runs (alive before the kill: the
/// control): the run reports the kill, the orphan, which the kernel handed to the zygote (a
/// child subreaper), was killed and reaped with the command's process group before the run
/// returned, and the zygote serves the next run.
fn orphans_of_a_killed_command(dir: &Path) -> Result<(), String> {
    echo(dir, "warm")?;
    let z = zygote_pid()?;
    let d = dir.to_path_buf();
    let long = std::thread::spawn(move || {
        run_sh(
            &d,
            &format!(
                "(sleep 100 & echo $! > {0}/orphan); echo $$ > {0}/command; sleep 100",
                d.display()
            ),
        )
    });
    let limit = Duration::from_secs(20);
    let command = read_pid(&dir.join("command"), limit)?;
    let orphan = read_pid(&dir.join("orphan"), limit)?;
    check(
        "the command and its orphan are the zygote's children",
        parent_of(command) == Some(z) && parent_of(orphan) == Some(z),
    )?;
    check("the orphan ran before the kill", !gone(orphan))?;
    let t0 = Instant::now();
    kill(command);
    let out = long
        .join()
        .map_err(|_| "the run's thread panicked".to_string())?
        .map_err(|e| e.to_string())?;
    check(
        &format!("the run reports the kill: {out:?}"),
        out.signal == Some(libc::SIGKILL) && !out.timed_out,
    )?;
    // The orphan holds the run's output pipe: the run ends only once it is gone.
    check(
        &format!("the run ended at once ({:?})", t0.elapsed()),
        t0.elapsed() < Duration::from_secs(10),
    )?;
    check(
        "the orphan was killed and reaped before the run returned",
        state(orphan).is_none(),
    )?;
    echo(dir, "after")?;
    check("the same zygote serves", zygote_pid()? == z)
}

/// A command that double-forks a daemon (its stdio on /dev/null, its parent gone at once) and
/// exits: unconfined (the control) the daemon outlives the shell; hardened it was killed and
/// reaped with the command's process group before the run returned.
fn double_forked_daemon(dir: &Path) -> Result<(), String> {
    let script = |d: &Path| {
        format!(
            "(sleep 100 </dev/null >/dev/null 2>&1 & echo $! > {0}/daemon); echo started",
            d.display()
        )
    };
    let control = dir.join("control");
    std::fs::create_dir(&control).map_err(|e| e.to_string())?;
    let out = run_unconfined(&script(&control))?;
    let daemon = read_pid(&control.join("daemon"), Duration::from_secs(5))?;
    let alive = !gone(daemon);
    kill(daemon);
    check(
        "unconfined, the daemon outlives the command",
        out.status.success() && alive,
    )?;
    let out = run_sh(dir, &script(dir)).map_err(|e| e.to_string())?;
    check(&format!("the run succeeded: {out:?}"), out.success())?;
    let daemon = read_pid(&dir.join("daemon"), Duration::ZERO)?;
    check(
        &format!("the daemon (pid {daemon}) was killed and reaped before the run returned"),
        state(daemon).is_none(),
    )
}

/// Two daemons that try to leave the command's process group, one by `setsid`, one by
/// `setpgid(0, 0)`, then sleep: unconfined (the control) both succeed and outlive the command,
/// one in a session of its own; hardened both calls are refused and both daemons are dead when
/// the run returns.
fn daemon_leaving_its_group(dir: &Path) -> Result<(), String> {
    let script = |d: &Path| {
        let d = d.display();
        format!(
            "perl -MPOSIX -e 'for my $how (\"setsid\", \"setpgid\") {{ next if fork; \
             my $ok = $how eq \"setsid\" ? (POSIX::setsid() // -1) != -1 : setpgrp(0, 0); \
             my $r = $ok ? \"ok\" : \"refused:$!\"; \
             open(STDOUT, \">/dev/null\"); open(STDERR, \">/dev/null\"); \
             open(my $f, \">\", \"$ARGV[0]/$how.tmp\"); print $f \"$$ $r\\n\"; close $f; \
             rename(\"$ARGV[0]/$how.tmp\", \"$ARGV[0]/$how\"); sleep 100; exit }}' {d}; \
             while [ ! -s {d}/setsid ] || [ ! -s {d}/setpgid ]; do sleep 0.05; done; echo spawned"
        )
    };
    let control = dir.join("control");
    std::fs::create_dir(&control).map_err(|e| e.to_string())?;
    let out = run_unconfined(&script(&control))?;
    let limit = Duration::from_secs(5);
    let (setsid, said_setsid) = read_note(&control.join("setsid"), limit)?;
    let (setpgid, said_setpgid) = read_note(&control.join("setpgid"), limit)?;
    let alive = !gone(setsid) && !gone(setpgid);
    let own_session = session_of(setsid) == Some(setsid);
    kill(setsid);
    kill(setpgid);
    check(
        &format!(
            "unconfined, both calls work and the daemons live on: {said_setsid} {said_setpgid} {out:?}"
        ),
        out.status.success() && said_setsid == "ok" && said_setpgid == "ok" && alive && own_session,
    )?;
    let out = run_sh(dir, &script(dir)).map_err(|e| e.to_string())?;
    check(&format!("the run succeeded: {out:?}"), out.success())?;
    let (setsid, said_setsid) = read_note(&dir.join("setsid"), Duration::ZERO)?;
    let (setpgid, said_setpgid) = read_note(&dir.join("setpgid"), Duration::ZERO)?;
    check(
        &format!("both calls refused: {said_setsid} / {said_setpgid}"),
        said_setsid.starts_with("refused:") && said_setpgid.starts_with("refused:"),
    )?;
    check(
        "both daemons were killed and reaped before the run returned",
        state(setsid).is_none() && state(setpgid).is_none(),
    )
}

/// A run that times out while a detached grandchild ignores SIGTERM (shown while it runs: a
/// SIGTERM from here leaves it alive): the run reports the timeout, and the grandchild was
/// killed and reaped before it returned.
fn timeout_kills_a_stubborn_grandchild(dir: &Path) -> Result<(), String> {
    let policy = policy_toml(dir, "", "[limits]\ntimeout_ms = 1500");
    let d = dir.to_path_buf();
    let started = Instant::now();
    let long = std::thread::spawn(move || {
        let script = format!(
            "(sh -c 'trap \"\" TERM; echo $$ > {0}/grandchild; while :; do sleep 1; done' &); \
             sleep 100",
            d.display()
        );
        run(&policy, &sh(&script), &hardened())
    });
    let grandchild = read_pid(&dir.join("grandchild"), Duration::from_secs(20))?;
    // SAFETY: signalling the test's own grandchild.
    unsafe { libc::kill(grandchild as i32, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(200));
    check("the grandchild ignores SIGTERM", !gone(grandchild))?;
    let out = long
        .join()
        .map_err(|_| "the run's thread panicked".to_string())?
        .map_err(|e| e.to_string())?;
    check(
        &format!("the run timed out: {out:?}"),
        out.timed_out && out.signal == Some(libc::SIGKILL),
    )?;
    check(
        &format!("it ended at its timeout ({:?})", started.elapsed()),
        started.elapsed() < Duration::from_secs(6),
    )?;
    check(
        "the grandchild was killed and reaped before the run returned",
        state(grandchild).is_none(),
    )
}

/// Four runs at once through one zygote, with different timeouts: the one whose command
/// outlives its 300 ms is killed at it, long before any other run ends (so no other run's
/// event is what woke the zygote for it), and the others, which sleep about 2 s each, run to
/// their own end, each with its own exit code and output, all at the same time (one after the
/// other they would take over 6 s).
fn concurrent_timeouts(dir: &Path) -> Result<(), String> {
    echo(dir, "warm")?;
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let dir = dir.to_path_buf();
            std::thread::spawn(move || -> Result<(), String> {
                let (timeout, script) = if i == 0 {
                    (300, "echo run0; sleep 30".to_string())
                } else {
                    (
                        20_000 + i * 1000,
                        format!("sleep 2.{i}; echo run{i}; exit {i}"),
                    )
                };
                let policy = policy_toml(&dir, "", &format!("[limits]\ntimeout_ms = {timeout}"));
                let started = Instant::now();
                let out = run(&policy, &sh(&script), &hardened()).map_err(|e| e.to_string())?;
                let took = started.elapsed();
                let output_ok = out.stdout == format!("run{i}\n").as_bytes();
                let brief = format!(
                    "took {took:?}, code {:?}, signal {:?}, timed out {}, stdout {:?}",
                    out.code,
                    out.signal,
                    out.timed_out,
                    String::from_utf8_lossy(&out.stdout)
                );
                if i == 0 {
                    check(
                        &format!("run 0 timed out at 300 ms, before any other run ended: {brief}"),
                        out.timed_out && output_ok && took < Duration::from_millis(1500),
                    )
                } else {
                    check(
                        &format!("run {i} ended by itself, beside the others: {brief}"),
                        !out.timed_out
                            && output_ok
                            && out.code == Some(i)
                            && took < Duration::from_millis(4500),
                    )
                }
            })
        })
        .collect();
    for t in threads {
        t.join().map_err(|_| "a thread panicked".to_string())??;
    }
    Ok(())
}

/// exec = deny in several runs at once: the zygote answers each run's notifications (the
/// command's own `execve` admitted, a later one refused), and a script whose `#!` line goes
/// through `/usr/bin/env` gets its relay's `PATH` search admitted, in every run alike.
fn concurrent_exec_supervision(dir: &Path) -> Result<(), String> {
    let script = dir.join("chain.sh");
    std::fs::write(
        &script,
        "#!/usr/bin/env sh\necho chain-$1; /bin/true && echo TRUE-RAN; exit 7\n",
    )
    .map_err(|e| e.to_string())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let dir = dir.to_path_buf();
            let script = script.clone();
            std::thread::spawn(move || -> Result<(), String> {
                let policy = policy_toml(&dir, "exec = \"deny\"", "");
                for i in 0..3 {
                    let out = run(
                        &policy,
                        &sh(&format!(
                            "echo started-{t}-{i}; /bin/true && echo TRUE-RAN; exit {i}"
                        )),
                        &hardened(),
                    )
                    .map_err(|e| e.to_string())?;
                    check(
                        &format!("run {t}/{i}: {out:?}"),
                        out.code == Some(i)
                            && out.stdout == format!("started-{t}-{i}\n").as_bytes(),
                    )?;
                    let argv = vec![script.clone().into_os_string(), format!("{t}-{i}").into()];
                    let out = run(&policy, &argv, &hardened()).map_err(|e| e.to_string())?;
                    check(
                        &format!("chain {t}/{i}: {out:?}"),
                        out.code == Some(7) && out.stdout == format!("chain-{t}-{i}\n").as_bytes(),
                    )?;
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join().map_err(|_| "a thread panicked".to_string())??;
    }
    Ok(())
}

/// Neither the zygote's control socket, nor a run's channels, nor a descriptor the agent left
/// inheritable reaches the command: its shell holds only its three standard streams, in the run
/// that starts the zygote, in one the running zygote serves, and in a strict run beside them.
fn command_holds_only_its_stdio(dir: &Path) -> Result<(), String> {
    let leaked = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    // SAFETY: a plain open of a directory, deliberately without O_CLOEXEC.
    let fd = unsafe { libc::open(leaked.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
    check("the agent opened an inheritable descriptor", fd > 2)?;
    let strict = RunOptions::default().profile(Profile::Strict);
    for (round, options) in [
        ("first hardened run", hardened()),
        ("hardened run through the running zygote", hardened()),
        ("strict run", strict),
    ] {
        let out = run(&policy_writing(dir), &sh("ls /proc/$$/fd"), &options)
            .map_err(|e| format!("{round}: {e}"))?;
        let fds = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        check(
            &format!("{round}: the command holds {fds:?}"),
            out.success() && fds == "0 1 2",
        )?;
    }
    zygote_pid().map(|_| ())
}

/// The command is the zygote's grandchild, not the caller's child, so the CPU it burns is
/// reported back (`RunOutput::helper_cpu`): the same fixed amount of shell work, run
/// unconfined as this process's child, costs about what the hardened run reports (at least
/// half of it: the report also holds the trampoline's and the zygote's share), and a strict run
/// (the caller's own child) reports none.
fn helper_cpu_counts_the_command(dir: &Path) -> Result<(), String> {
    let work = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done";
    let children_cpu = || {
        // SAFETY: getrusage fills a zeroed struct.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
            usage
        };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        tv(usage.ru_utime) + tv(usage.ru_stime)
    };
    let before = children_cpu();
    let status = Command::new("/bin/sh")
        .args(["-c", work])
        .status()
        .map_err(|e| e.to_string())?;
    let unconfined = children_cpu().saturating_sub(before);
    check("the unconfined loop ran", status.success())?;
    let out = run_sh(dir, work).map_err(|e| e.to_string())?;
    let reported = out.helper_cpu.unwrap_or_default();
    check(
        &format!("hardened: helper_cpu {reported:?}, the same work unconfined {unconfined:?}"),
        out.success() && reported >= unconfined / 2 && reported > Duration::ZERO,
    )?;
    let strict = RunOptions::default().profile(Profile::Strict);
    let out = run(&policy_writing(dir), &sh("true"), &strict).map_err(|e| e.to_string())?;
    check(
        &format!("strict: helper_cpu {:?}", out.helper_cpu),
        out.success() && out.helper_cpu.is_none(),
    )
}

/// Landlock's signal scope keeps the command from signalling processes outside its domain:
/// neither the zygote (its parent) nor the agent can be killed from inside, and the run ends
/// normally with the zygote still serving.
fn command_cannot_signal_its_helpers(dir: &Path) -> Result<(), String> {
    echo(dir, "first")?;
    let z = zygote_pid()?;
    let agent = std::process::id();
    let script = format!("kill -9 {agent}; echo t=$?; kill -9 $PPID; echo z=$?");
    let out = run_sh(dir, &script).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    check(
        &format!("both kills refused and the run ended normally: {text:?} {out:?}"),
        out.success() && !text.contains("t=0") && !text.contains("z=0") && text.contains("z="),
    )?;
    check("the zygote still serves", zygote_pid()? == z && !gone(z))?;
    echo(dir, "after")
}

/// What a hardened command says about itself: its parent, its number of seccomp filters, and
/// whether `setsid` was refused (by its tail).
fn command_view(policy: &ToolPolicy) -> Result<String, String> {
    // `$$` is the command itself (`sh`), not the `grep` it starts.
    let script = "grep -E '^(PPid|Seccomp_filters):' /proc/$$/status | tr -d '\t'; \
                  setsid true 2>/dev/null && echo setsid=ran || echo setsid=refused";
    let out = run(policy, &sh(script), &hardened()).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    check(&format!("{text:?} {out:?}"), out.success())?;
    Ok(text)
}

/// The hardened filter is installed once, by the zygote of that program and tail, on itself:
/// each command is the zygote's child under the same two filters (the shared program, and the
/// tail, which refuses `setsid`), inherited, not installed per run. The same policy's runs
/// share the zygote; a policy whose program differs gets a zygote of its own, under its own
/// filters, and the first one keeps serving.
fn zygote_per_program(dir: &Path) -> Result<(), String> {
    let writing = policy_writing(dir);
    let view = command_view(&writing)?;
    let z = zygote_pid()?;
    let under_both = |pid: u32| {
        status_field(pid, "Seccomp_filters:").as_deref() == Some("2")
            && status_field(pid, "NoNewPrivs:").as_deref() == Some("1")
    };
    let expected = |z: u32| format!("PPid:{z}\nSeccomp_filters:2\nsetsid=refused\n");
    check(
        &format!("the command's view {view:?} of zygote {z}"),
        view == expected(z) && under_both(z),
    )?;
    let again = command_view(&writing)?;
    check(
        &format!("the second run, through the same zygote: {again:?}"),
        again == expected(z) && zygote_pid()? == z,
    )?;
    // With the network allowed, the program refuses no socket family: another program.
    let networked = ToolPolicy::from_json_str(
        "case",
        &format!(
            r#"{{"fs": {{"write": ["{}/**"]}}, "net": "allow"}}"#,
            dir.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    let other = command_view(&networked)?;
    let z2 = zygote_pid()?;
    check(
        &format!("another program, zygote {z2} beside {z}: {other:?}"),
        z2 != z && other == expected(z2) && under_both(z2) && !gone(z),
    )?;
    let back = command_view(&writing)?;
    check(
        &format!("the first policy again, through its zygote: {back:?}"),
        back == expected(z),
    )
}

/// A request the zygote refuses before it starts the command's process (an argument holding a
/// NUL byte, which no `execve` can pass): the refusal is the run's first message on its socket,
/// and the agent returns it, typed, with nothing run; the zygote serves the next run.
fn request_refused_by_the_zygote(dir: &Path) -> Result<(), String> {
    echo(dir, "before")?;
    let z = zygote_pid()?;
    let marker = dir.join("ran");
    let argv: Vec<OsString> = vec![
        "/bin/sh".into(),
        "-c".into(),
        format!("echo ran > {}", marker.display()).into(),
        std::os::unix::ffi::OsStringExt::from_vec(b"a\0b".to_vec()),
    ];
    let result = run(&policy_writing(dir), &argv, &hardened());
    check(
        &format!("the zygote's refusal: {result:?}"),
        matches!(&result, Err(RunError::SetUp(r))
            if r.step == SetUpStep::Request && r.to_string().contains("NUL")),
    )?;
    check("nothing ran", !marker.exists())?;
    echo(dir, "after")?;
    check("the same zygote serves on", zygote_pid()? == z)
}

/// A run's request travels in its message up to 60 KiB and on a pipe of its own beyond: two
/// 100 KB arguments (one may not pass 128 KiB), then a small run, each get exactly their own
/// command.
fn request_on_a_pipe(dir: &Path) -> Result<(), String> {
    let long = "x".repeat(100_000);
    let out = run(
        &policy_writing(dir),
        &sh("printf %s \"$1$2\" | wc -c")
            .into_iter()
            .chain(["arg0".into(), long.clone().into(), long.into()])
            .collect::<Vec<_>>(),
        &hardened(),
    )
    .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    check(
        &format!("the 200 KB of arguments arrived whole: {text:?} {out:?}"),
        out.success() && text == "200000",
    )?;
    echo(dir, "small")
}

// ---- what the command inherits from the agent at the time of the run ----

/// The command's output of `script` in a hardened run, checked to succeed.
fn output_of(dir: &Path, script: &str) -> Result<String, String> {
    let out = run_sh(dir, script).map_err(|e| e.to_string())?;
    check(&format!("{script}: {out:?}"), out.success())?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The agent sets umask 022, runs (which starts the zygote), sets 077 and runs again: the
/// command reports 0077 and a file it creates has mode 0600, as a strict or bare run would,
/// through the same zygote.
fn umask_follows_the_agent(dir: &Path) -> Result<(), String> {
    // SAFETY: umask only swaps this process's mask.
    unsafe { libc::umask(0o022) };
    check("the first run's umask", output_of(dir, "umask")? == "0022")?;
    let z = zygote_pid()?;
    // SAFETY: as above.
    unsafe { libc::umask(0o077) };
    let script = format!("umask; touch {0}/made; stat -c %a {0}/made", dir.display());
    let seen = output_of(dir, &script)?;
    check(
        &format!("the run after umask 077 reports it and creates 0600 files: {seen:?}"),
        seen == "0077\n600",
    )?;
    check("the same zygote serves", zygote_pid()? == z)
}

/// The calling thread's nice value.
fn thread_nice() -> i32 {
    // SAFETY: getpriority with integers; errno is cleared first because -1 is a value.
    unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, 0)
    }
}

/// The CPUs the calling thread may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set, which the call fills.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sched_getaffinity of the calling thread into a set of the size given.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } != 0 {
        return Vec::new();
    }
    // SAFETY: CPU numbers below CPU_SETSIZE, in our own set.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// Pins the calling thread to `cpu`.
fn pin_thread_to(cpu: usize) -> Result<(), String> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; `cpu` is below CPU_SETSIZE.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set)
    };
    if rc != 0 {
        return Err(format!(
            "sched_setaffinity({cpu}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Sets the calling thread's nice value.
fn set_thread_nice(nice: i32) -> Result<(), String> {
    // SAFETY: setpriority with integers.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } != 0 {
        return Err(format!(
            "setpriority({nice}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Scheduling that the agent's calling thread changes between runs. As root: it starts its
/// zygote at nice 5 (the control run reports 5), lowers its nice value to 0, which the
/// command's process could not follow without a privilege (the next run reports 0, from a new
/// zygote), then raises it to 5 again and pins itself to one of its CPUs: the next command
/// reports both, through the same zygote, and so does a strict run (a clone of that thread).
/// Without the privilege to lower it, the first part is left out and the rest starts from the
/// thread's own nice value.
fn scheduling_follows_the_agent(dir: &Path) -> Result<(), String> {
    let script = "echo $(nice) $(nproc)";
    let cpus = allowed_cpus().len();
    let may_lower = set_thread_nice(0).is_ok();
    let base = thread_nice();
    if base + 5 > 19 {
        eprintln!("skipped: this test runs at nice {base}, and may not lower it");
        return Ok(());
    }
    let raised = base + 5;
    let mut z = None;
    if may_lower {
        set_thread_nice(raised)?;
        check(
            "the control run, which starts the zygote",
            output_of(dir, script)? == format!("{raised} {cpus}"),
        )?;
        let first = zygote_pid()?;
        set_thread_nice(base)?;
        let seen = output_of(dir, script)?;
        check(
            &format!("the run after lowering the nice value reports {base}: {seen:?}"),
            seen == format!("{base} {cpus}"),
        )?;
        let second = zygote_pid()?;
        check("a new zygote serves it", second != first)?;
        z = Some(second);
    } else {
        eprintln!("the lowering part is not shown: lowering a nice value needs CAP_SYS_NICE");
        check(
            "the control run, which starts the zygote",
            output_of(dir, script)? == format!("{base} {cpus}"),
        )?;
    }
    let z = match z {
        Some(z) => z,
        None => zygote_pid()?,
    };
    set_thread_nice(raised)?;
    let pinned = if cpus > 1 {
        pin_thread_to(allowed_cpus()[cpus - 1])?;
        1
    } else {
        eprintln!("the affinity part is not shown: this host gives the test one CPU");
        cpus
    };
    let want = format!("{raised} {pinned}");
    let seen = output_of(dir, script)?;
    check(
        &format!("the hardened run after renice and pinning reports {want:?}: {seen:?}"),
        seen == want,
    )?;
    check("the same zygote serves", zygote_pid()? == z)?;
    strict_prints(dir, script, &want, "nice value and CPUs")
}

/// Prints the scheduling policy of the command's own process: field 41 of `/proc/self/stat`
/// of `cut`, its shell's child (whose name holds no space).
const POLICY_SCRIPT: &str = "cut -d' ' -f41 /proc/self/stat";

/// Sets the calling thread's scheduling policy (`SCHED_*`, with `SCHED_RESET_ON_FORK` or not).
fn set_policy(policy: i32, priority: i32) -> Result<(), String> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sched_setscheduler of the calling thread with a valid struct.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(format!(
            "sched_setscheduler({policy:#x}, {priority}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// The scheduling policy that the agent's calling thread changes between runs: each hardened
/// command reports the thread's, as a plain child of it (the control) and a strict run's do.
/// SCHED_BATCH and SCHED_IDLE travel through the zygote started under SCHED_OTHER. A zygote
/// started under SCHED_IDLE cannot follow the thread back out of it (its G may lack the room
/// under RLIMIT_NICE), so that run goes through a new zygote. As root, also real time: a
/// SCHED_FIFO thread's command runs under SCHED_FIFO (through a new zygote, since taking real
/// time needs a privilege), and one with SCHED_RESET_ON_FORK runs under SCHED_OTHER, as the
/// kernel starts that thread's children.
fn policy_follows_the_agent(dir: &Path) -> Result<(), String> {
    let reports = |want: i32, what: &str| -> Result<(), String> {
        let control = unconfined_output(POLICY_SCRIPT)?;
        check(
            &format!("{what}: a plain child reports policy {want}: {control:?}"),
            control == want.to_string(),
        )?;
        let seen = output_of(dir, POLICY_SCRIPT)?;
        check(
            &format!("{what}: the hardened command reports policy {want}: {seen:?}"),
            seen == want.to_string(),
        )
    };
    reports(
        libc::SCHED_OTHER,
        "the control run, which starts the zygote",
    )?;
    let z = zygote_pid()?;
    set_policy(libc::SCHED_BATCH, 0)?;
    reports(libc::SCHED_BATCH, "under SCHED_BATCH")?;
    strict_prints(dir, POLICY_SCRIPT, &libc::SCHED_BATCH.to_string(), "policy")?;
    set_policy(libc::SCHED_IDLE, 0)?;
    reports(libc::SCHED_IDLE, "under SCHED_IDLE")?;
    check("the same zygote serves", zygote_pid()? == z)?;
    zygote::shut_down();
    reports(libc::SCHED_IDLE, "a zygote started under SCHED_IDLE")?;
    let idle_zygote = zygote_pid()?;
    if set_policy(libc::SCHED_OTHER, 0).is_err() {
        eprintln!("the rest is not shown: this thread may not leave SCHED_IDLE");
        return Ok(());
    }
    reports(libc::SCHED_OTHER, "back under SCHED_OTHER")?;
    let other_zygote = zygote_pid()?;
    check(
        "a new zygote serves the run that left SCHED_IDLE",
        other_zygote != idle_zygote,
    )?;
    if set_policy(libc::SCHED_FIFO, 1).is_err() {
        eprintln!("the real-time part is not shown: this thread may not take SCHED_FIFO");
        return Ok(());
    }
    reports(libc::SCHED_FIFO, "under SCHED_FIFO")?;
    check(
        "a new zygote serves the run that took real time",
        zygote_pid()? != other_zygote,
    )?;
    set_policy(libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, 1)?;
    reports(
        libc::SCHED_OTHER,
        "under SCHED_FIFO with SCHED_RESET_ON_FORK",
    )?;
    set_policy(libc::SCHED_OTHER, 0)
}

/// Prints the command's I/O priority (`ionice`) and OOM score adjustment.
const IO_OOM_SCRIPT: &str = "ionice; cat /proc/self/oom_score_adj";

/// Sets the calling thread's I/O priority: `class` (1 real time, 2 best effort, 3 idle) and
/// `level`.
fn set_io_priority(class: i32, level: i32) -> Result<(), String> {
    // SAFETY: ioprio_set of the calling thread (IOPRIO_WHO_PROCESS, who 0) takes integers.
    if unsafe { libc::syscall(libc::SYS_ioprio_set, 1, 0, class << 13 | level) } != 0 {
        return Err(format!(
            "ioprio_set({class}, {level}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Sets this process's OOM score adjustment.
fn set_oom_score_adj(adj: i32) -> Result<(), String> {
    std::fs::write("/proc/self/oom_score_adj", adj.to_string())
        .map_err(|e| format!("oom_score_adj {adj}: {e}"))
}

/// The agent's I/O priority and OOM score adjustment, changed between runs: each hardened
/// command reports the agent's, as a plain child of it (the control) does. The idle I/O class
/// and a raised score travel through the zygote; as root, a lowered score and the real-time
/// I/O class, which the command's process could not take without a privilege, go through a
/// new zygote.
fn io_priority_and_oom_score_follow_the_agent(dir: &Path) -> Result<(), String> {
    let reports = |what: &str| -> Result<String, String> {
        let control = unconfined_output(IO_OOM_SCRIPT)?;
        let seen = output_of(dir, IO_OOM_SCRIPT)?;
        check(
            &format!("{what}: the hardened command reports {seen:?}, a plain child {control:?}"),
            seen == control,
        )?;
        Ok(seen)
    };
    reports("the control run, which starts the zygote")?;
    let z = zygote_pid()?;
    set_io_priority(3, 0)?;
    set_oom_score_adj(500)?;
    let seen = reports("in the idle I/O class at OOM score 500")?;
    check(
        &format!("the command is idle at 500: {seen:?}"),
        seen == "idle\n500",
    )?;
    check("the same zygote serves", zygote_pid()? == z)?;
    if set_oom_score_adj(100).is_err() || set_io_priority(1, 4).is_err() {
        eprintln!("the rest is not shown: lowering the score or real-time I/O needs privileges");
        return Ok(());
    }
    let seen = reports("in the real-time I/O class at OOM score 100")?;
    check(
        &format!("the command is real-time at 100: {seen:?}"),
        seen == "realtime: prio 4\n100",
    )?;
    check("a new zygote serves", zygote_pid()? != z)
}

/// Reaps every child of this process, as an agent's SIGCHLD handler may.
extern "C" fn reap_every_child(_: libc::c_int) {
    // SAFETY: waitpid is async-signal-safe; the status is not kept.
    while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
}

/// An agent that ignores SIGCHLD or sets `SA_NOCLDWAIT` (the kernel then reaps its children
/// itself), or reaps every child from a handler, takes the strict child's wait status before
/// the runner can: each profile's run must still end, with the command's own status and output
/// (read back from the pidfd on Linux 6.15 and later, or a `StatusLost` error before), never
/// hang. An earlier version spun on `waitpid` forever.
fn status_survives_the_agents_sigchld(dir: &Path) -> Result<(), String> {
    let script = "echo out; exit 3";
    let handler = reap_every_child as extern "C" fn(libc::c_int) as libc::sighandler_t;
    let dispositions = [
        ("ignored", libc::SIG_IGN, 0),
        ("reaped by a handler", handler, 0),
        (
            "default with SA_NOCLDWAIT",
            libc::SIG_DFL,
            libc::SA_NOCLDWAIT,
        ),
    ];
    for (what, disposition, flags) in dispositions {
        // SAFETY: setting this case process's own action (its one thread runs the runs); an
        // all-zero sigaction is valid.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = disposition;
            action.sa_flags = flags;
            libc::sigaction(libc::SIGCHLD, &action, std::ptr::null_mut());
        }
        let mut profiles = vec![Profile::Hardened];
        if kernel::user_namespaces() {
            profiles.push(Profile::Strict);
        }
        for profile in profiles {
            let opts = match profile {
                Profile::Hardened => hardened(),
                Profile::Strict => RunOptions::default().profile(Profile::Strict),
            };
            let outcome = run(&policy_writing(dir), &sh(script), &opts);
            match outcome {
                Ok(out) => check(
                    &format!(
                        "SIGCHLD {what}, {profile:?}: the command's status and output: {out:?}"
                    ),
                    out.code == Some(3) && out.stdout == b"out\n",
                )?,
                Err(RunError::StatusLost(why)) if kernel::release() < (6, 15) => {
                    eprintln!("SIGCHLD {what}, {profile:?}: the status is lost here: {why}")
                }
                Err(e) => return Err(format!("SIGCHLD {what}, {profile:?}: {e}")),
            }
        }
    }
    // SAFETY: as above.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) };
    Ok(())
}

/// The agent ignores SIGHUP (as under `nohup`) when its zygote starts, and the zygote, a Rust
/// program, ignores SIGPIPE: ignored signals survive `execve`, yet each profile's command must
/// start with none ignored, as the strict child's reset gives it (a hardened command once
/// kept SIGPIPE ignored, so `yes | head -1` left `yes` writing into a closed pipe). The
/// control, a plain child of the agent, shows SIGHUP ignored.
fn no_signal_ignored(dir: &Path) -> Result<(), String> {
    // SAFETY: setting this case process's own disposition.
    unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
    let script = "grep SigIgn /proc/self/status";
    let control = unconfined_output(script)?;
    check(
        &format!("the control shows SIGHUP ignored: {control:?}"),
        control.ends_with('1'),
    )?;
    let mut profiles = vec![("hardened", hardened())];
    if kernel::user_namespaces() {
        profiles.push(("strict", RunOptions::default().profile(Profile::Strict)));
    }
    for (name, opts) in profiles {
        for _ in 0..2 {
            let out = run(&policy_writing(dir), &sh(script), &opts).map_err(|e| e.to_string())?;
            let seen = String::from_utf8_lossy(&out.stdout).trim().to_string();
            check(
                &format!("the {name} command ignores no signal: {seen:?}"),
                out.success() && seen == "SigIgn:\t0000000000000000",
            )?;
        }
    }
    Ok(())
}

/// The agent turns address-space randomisation off (`setarch -R` does it before `exec`) after
/// its zygote started: the next hardened command has the same personality, as a plain child
/// and a strict run's command do.
fn personality_follows_the_agent(dir: &Path) -> Result<(), String> {
    follows_the_agent(
        dir,
        "cat /proc/self/personality",
        "personality",
        "00040000",
        || {
            // SAFETY: personality of this case process takes an integer.
            if unsafe { libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong) } < 0 {
                return Err(format!("personality: {}", std::io::Error::last_os_error()));
            }
            Ok(())
        },
    )
}

/// Runs `script` (which prints the agent's value named `what`), then `change` (which makes it
/// `want`), then `script` again: the second command prints the agent's new value, as a plain
/// child and a strict run's command do, through the same zygote.
fn follows_the_agent(
    dir: &Path,
    script: &str,
    what: &str,
    want: &str,
    change: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let first = output_of(dir, script)?;
    let z = zygote_pid()?;
    change()?;
    let control = unconfined_output(script)?;
    let seen = output_of(dir, script)?;
    check(
        &format!("the command's {what} {seen} is the agent's {control} (was {first})"),
        seen == control && seen == want && first != seen,
    )?;
    check("the same zygote serves", zygote_pid()? == z)?;
    strict_prints(dir, script, &control, what)
}

/// The agent widens its timer slack (as a power-saving agent may) after its zygote started:
/// the next hardened command has the same slack, as a plain child and a strict run's command
/// do, through the same zygote. The slack is above what an `int` holds.
fn timer_slack_follows_the_agent(dir: &Path) -> Result<(), String> {
    let slack: u64 = 3_000_000_007;
    follows_the_agent(
        dir,
        "cat /proc/self/timerslack_ns",
        "timer slack",
        &slack.to_string(),
        || {
            // SAFETY: PR_SET_TIMERSLACK of this case process's only thread takes an integer.
            let set =
                unsafe { libc::syscall(libc::SYS_prctl, libc::PR_SET_TIMERSLACK, slack, 0, 0, 0) };
            if set != 0 {
                return Err(format!("timer slack: {}", std::io::Error::last_os_error()));
            }
            Ok(())
        },
    )
}

/// Sets this process's supplementary groups.
fn set_groups(groups: &[libc::gid_t]) -> Result<(), String> {
    // SAFETY: setgroups reads `groups.len()` entries.
    if unsafe { libc::setgroups(groups.len(), groups.as_ptr()) } != 0 {
        return Err(format!(
            "setgroups({groups:?}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// An agent that drops a supplementary group after its zygote started (keeping its uid) must
/// not have its next command run with that group: the command's groups are the agent's of the
/// time of the run, as a plain child's are, through a new zygote. Root only: changing groups
/// takes CAP_SETGID.
fn dropped_group_gets_a_new_zygote(dir: &Path) -> Result<(), String> {
    if set_groups(&[0, 4242]).is_err() {
        eprintln!("skipped: changing this process's groups needs CAP_SETGID");
        return Ok(());
    }
    let script = "id -G";
    let plain = |what: &str| -> Result<String, String> {
        let control = unconfined_output(script)?;
        let seen = output_of(dir, script)?;
        check(
            &format!("{what}: the command's groups {seen:?} are a plain child's {control:?}"),
            seen == control,
        )?;
        Ok(seen)
    };
    check(
        "with group 4242",
        plain("with group 4242")?.ends_with("4242"),
    )?;
    let z = zygote_pid()?;
    set_groups(&[0])?;
    check(
        "after dropping it",
        !plain("after dropping group 4242")?.contains("4242"),
    )?;
    check("a new zygote serves", zygote_pid()? != z)
}

fn set_limit(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> Result<(), String> {
    let rl = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit with a valid struct.
    if unsafe { libc::setrlimit(resource, &rl) } != 0 {
        return Err(format!(
            "setrlimit({resource}, {soft}, {hard}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// The agent lowers its open-files limit (soft and hard) and its stack's soft limit after its
/// first run: the next command reports the new values (the first run, with the old ones, is
/// the control), through the same zygote.
fn lowered_limits_follow_the_agent(dir: &Path) -> Result<(), String> {
    set_limit(libc::RLIMIT_NOFILE, 1024, 4096)?;
    set_limit(libc::RLIMIT_STACK, 8 << 20, libc::RLIM_INFINITY)?;
    let script = "echo $(ulimit -n) $(ulimit -Hn) $(ulimit -s)";
    check(
        "the first run's limits",
        output_of(dir, script)? == "1024 4096 8192",
    )?;
    let z = zygote_pid()?;
    set_limit(libc::RLIMIT_NOFILE, 200, 300)?;
    set_limit(libc::RLIMIT_STACK, 4 << 20, libc::RLIM_INFINITY)?;
    let seen = output_of(dir, script)?;
    check(
        &format!("the run after lowering reports the new limits: {seen:?}"),
        seen == "200 300 4096",
    )?;
    check("the same zygote serves", zygote_pid()? == z)
}

/// With CAP_SYS_RESOURCE, the agent raises its open-files hard limit above the one its zygote started
/// with, which the command's process (without privileges when it sets its limits) could not
/// raise: the next run gets it from a new zygote, and the old one, idle, ends and is reaped.
fn raised_hard_limit_follows_the_agent(dir: &Path) -> Result<(), String> {
    set_limit(libc::RLIMIT_NOFILE, 1024, 2048)?;
    let script = "echo $(ulimit -n) $(ulimit -Hn)";
    check(
        "the first run's limits",
        output_of(dir, script)? == "1024 2048",
    )?;
    let old = zygote_pid()?;
    if let Err(e) = set_limit(libc::RLIMIT_NOFILE, 3000, 4000) {
        // Not a kernel feature: a privilege this host's root may lack (containers drop it).
        eprintln!("skipped: raising a hard limit needs CAP_SYS_RESOURCE: {e}");
        return Ok(());
    }
    let seen = output_of(dir, script)?;
    check(
        &format!("the run after raising reports the new limits: {seen:?}"),
        seen == "3000 4000",
    )?;
    check("a new zygote serves", zygote_pid()? != old)?;
    check(
        "the old zygote ended",
        gone_within(old, Duration::from_secs(10)),
    )?;
    echo(dir, "again")?;
    check("and was reaped", state(old).is_none())
}

/// The agent moves itself into a new pids cgroup (the hierarchy the sandbox's cgroups use)
/// while a run is in flight: that run ends well, through the zygote it started on; the next
/// run's command is in the new cgroup (the first, in the old one, is the control), through a
/// new zygote; the old one ends once its run is over.
fn cgroup_follows_the_agent(dir: &Path) -> Result<(), String> {
    let host = sandbox::hostcaps::HostSupport::detect();
    let Some(pids) = &host.pids_cgroup else {
        kernel::missing("no writable pids cgroup (root with the cgroup controllers)");
        return Ok(());
    };
    let name = format!("toolpolicy-zygote-test-{}", std::process::id());
    let moved = pids.parent.join(&name);
    std::fs::create_dir(&moved).map_err(|e| format!("creating {}: {e}", moved.display()))?;
    let result = in_moved_cgroup(dir, &moved, &name);
    // Back where this process came from, so that the cgroup can go.
    let home = pids.parent.join("cgroup.procs");
    let _ = std::fs::write(&home, "0");
    shut_down_and_remove(&moved);
    result
}

fn in_moved_cgroup(dir: &Path, moved: &Path, name: &str) -> Result<(), String> {
    let script = "cat /proc/self/cgroup";
    let first = output_of(dir, script)?;
    check(
        &format!("the first run is not in {name}: {first}"),
        !first.contains(name),
    )?;
    let old = zygote_pid()?;
    let d = dir.to_path_buf();
    let in_flight = std::thread::spawn(move || output_of(&d, "sleep 1; echo done"));
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(moved.join("cgroup.procs"), "0")
        .map_err(|e| format!("joining {}: {e}", moved.display()))?;
    let seen = output_of(dir, script)?;
    check(
        &format!("the run after the move is in {name}: {seen}"),
        seen.lines().any(|l| l.ends_with(&format!("/{name}"))),
    )?;
    check("a new zygote serves", zygote_pid()? != old)?;
    let done = in_flight
        .join()
        .map_err(|_| "the run's thread panicked".to_string())??;
    check("the run in flight ended well", done == "done")?;
    check(
        "the old zygote ended after its run",
        gone_within(old, Duration::from_secs(10)),
    )
}

/// Ends the zygotes (one lives in `cgroup`), then removes it.
fn shut_down_and_remove(cgroup: &Path) {
    zygote::shut_down();
    for _ in 0..200 {
        if std::fs::remove_dir(cgroup).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The agent lowers its open-files hard limit to 512 after a first run; a policy that sets
/// `max_open_files = 1024` is then refused before its command starts, by the step that sets
/// the limits, with the kernel's EPERM (a process without privileges cannot raise a hard
/// limit), in the hardened profile as in the strict one (when this host runs it): the
/// command's process starts from the agent's limits of the moment in both. The control: the
/// same policy ran before the limit was lowered.
fn limit_above_the_agents_is_refused(dir: &Path) -> Result<(), String> {
    let policy = policy_toml(dir, "", "[limits]\nmax_open_files = 1024");
    let script = sh("ulimit -n");
    let mut profiles = vec![Profile::Hardened];
    if kernel::user_namespaces() {
        profiles.push(Profile::Strict);
    }
    let options = |profile| RunOptions::default().helper(HELPER).profile(profile);
    for &profile in &profiles {
        let out = run(&policy, &script, &options(profile)).map_err(|e| e.to_string())?;
        check(
            &format!("{profile:?} before: {out:?}"),
            out.success() && out.stdout == b"1024\n",
        )?;
    }
    set_limit(libc::RLIMIT_NOFILE, 256, 512)?;
    for &profile in &profiles {
        match run(&policy, &script, &options(profile)) {
            Err(RunError::SetUp(refusal)) => check(
                &format!("{profile:?}: refused by the limits' step with EPERM: {refusal:?}"),
                refusal.step == SetUpStep::ResourceLimits
                    && refusal.os_error().and_then(|e| e.raw_os_error()) == Some(libc::EPERM)
                    && refusal.to_string().contains("Operation not permitted"),
            )?,
            other => {
                return Err(format!(
                    "{profile:?}: expected a set-up refusal, got {other:?}"
                ))
            }
        }
    }
    Ok(())
}

// ---- a seccomp program the kernel refuses ----

/// An allow-all filter of `len` instructions, installed on the calling thread: `Err(errno)`.
fn install_allow_all(len: usize) -> Result<(), i32> {
    let load_nr = libc::sock_filter {
        code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
        jt: 0,
        jf: 0,
        k: 0,
    };
    let allow = libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ALLOW,
    };
    let mut program = vec![load_nr; len - 1];
    program.push(allow);
    load_filter(&mut program)
}

/// Installs `program` as a seccomp filter on the calling thread: `Err(errno)`.
fn load_filter(program: &mut [libc::sock_filter]) -> Result<(), i32> {
    let fprog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_mut_ptr(),
    };
    // SAFETY: the program outlives the call, which copies it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &fprog as *const libc::sock_fprog,
        )
    };
    match r {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)),
    }
}

/// Whether a filter of `len` instructions still fits this process's chain, tried in a forked
/// child so that nothing is installed here.
fn fits(len: usize) -> bool {
    // SAFETY: the case process is single-threaded here; the child only installs and exits.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            libc::_exit(i32::from(install_allow_all(len).is_err()));
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }
}

/// Installs allow-all filters on this process until the kernel's budget for one process's
/// chain of filters (`MAX_INSNS_PER_PATH`: 32,768 instructions, each filter counted with 4
/// more) leaves room for a filter of 40 to 64 instructions and no more (the hardened tail has
/// at most 38, its shared program more than 64). Returns the room.
fn fill_the_seccomp_budget() -> Result<usize, String> {
    // SAFETY: prctl with integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("NO_NEW_PRIVS: {}", std::io::Error::last_os_error()));
    }
    loop {
        // The longest filter that fits (one program holds at most 4,096 instructions).
        let (mut lo, mut hi) = (0usize, 4096);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        if lo <= 64 {
            return if lo >= 40 {
                Ok(lo)
            } else {
                Err(format!("only {lo} instructions of room to start with"))
            };
        }
        // Aim at 56 instructions of room: the count the kernel checks is not exactly the sum
        // of the classic programs' lengths (filling to 48 left 44 here), so the aim leaves
        // margin on both sides of the window.
        install_allow_all((lo - 4 - 56).min(4096)).map_err(|e| format!("seccomp: errno {e}"))?;
    }
}

/// When the kernel refuses the zygote's program (here: this agent's chain of filters leaves
/// room for the tail but not for the program), the zygote runs without it and its commands
/// must install the whole filter themselves; they cannot either, so the run is refused with
/// the reason, and the command never runs. A command that installed only its tail, as if it
/// had inherited the program, would run: never a command without its whole filter.
fn program_refused_by_the_kernel(dir: &Path) -> Result<(), String> {
    let room = fill_the_seccomp_budget()?;
    let ours = status_field(std::process::id(), "Seccomp_filters:");
    let marker = dir.join("ran");
    let result = run_sh(dir, &format!("echo escaped > {}", marker.display()));
    check(
        &format!("a run with room for {room} filter instructions: {result:?}"),
        matches!(&result, Err(RunError::SetUp(r))
            if r.step == SetUpStep::Seccomp && r.errno == Some(libc::ENOMEM)),
    )?;
    check("the command did not run", !marker.exists())?;
    // The zygote started, and inherited this process's filters, and added none: the refusal
    // came from the command's own install of the whole filter.
    let z = zygote_pid()?;
    check(
        &format!("zygote {z} under only the agent's filters ({ours:?})"),
        status_field(z, "Seccomp_filters:") == ours,
    )
}

// ---- an agent that confines itself further after its zygote started ----

/// What a symbolic link's creation in `dir` gives: "made" or "refused" (the tried link is
/// removed again).
fn symlink_script(dir: &Path) -> String {
    format!(
        "if ln -s target {0}/link 2>/dev/null; then rm {0}/link; echo made; else echo refused; fi",
        dir.display()
    )
}

/// Before the agent changes anything: the command prints `before`, what a plain child printed
/// (`what` names it); returns the zygote that served it.
fn before_the_change(dir: &Path, script: &str, before: &str, what: &str) -> Result<u32, String> {
    check(
        &format!("before, the command's {what} is a plain child's, {before:?}"),
        output_of(dir, script)? == before,
    )?;
    zygote_pid()
}

/// Checks that the command's answer to `script` is a plain child's, `want`, and that a new
/// zygote (not `old`) gave it.
fn answers_as_a_plain_child(dir: &Path, script: &str, want: &str, old: u32) -> Result<(), String> {
    let control = unconfined_output(script)?;
    check(
        &format!("the plain child answers {want:?}: {control:?}"),
        control == want,
    )?;
    let seen = output_of(dir, script)?;
    check(
        &format!("the command answers as the agent's plain child, {control:?}: {seen:?}"),
        seen == control,
    )?;
    check("a new zygote serves", zygote_pid()? != old)
}

/// Sets NO_NEW_PRIVS on this process (before its first run, so that the change under test is
/// the only one).
fn no_new_privs() -> Result<(), String> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!(
            "PR_SET_NO_NEW_PRIVS: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Installs a filter on the calling thread that answers the creation of symbolic links with
/// EPERM and allows everything else.
fn refuse_symlinks() -> Result<(), String> {
    #[cfg(target_arch = "x86_64")]
    let calls = [libc::SYS_symlink, libc::SYS_symlinkat];
    #[cfg(not(target_arch = "x86_64"))]
    let calls = [libc::SYS_symlinkat];
    refuse_syscalls(&calls)
}

/// Installs a filter on the calling thread that answers `calls` with EPERM and allows
/// everything else.
fn refuse_syscalls(calls: &[libc::c_long]) -> Result<(), String> {
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump_eq = |k: u32, jt: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf: 0,
        k,
    };
    let mut program = vec![stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0)];
    program.extend(calls.iter().map(|&nr| jump_eq(nr as u32, 0)));
    program.push(stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW));
    program.push(stmt(
        libc::BPF_RET | libc::BPF_K,
        libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
    ));
    // Each jump, on a match, goes to the last instruction (the refusal) from where it sits.
    let last = program.len() - 1;
    for (at, insn) in program.iter_mut().enumerate() {
        if insn.code == (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16 {
            insn.jt = (last - at - 1) as u8;
        }
    }
    load_filter(&mut program)
        .map_err(|e| format!("seccomp: {}", std::io::Error::from_raw_os_error(e)))
}

/// An agent already under a seccomp filter (mode 2, as in a container) that adds another after
/// its zygote started: its mode and ids are unchanged, yet its commands must run under the new
/// filter too, as its plain children do.
fn added_filter_gets_a_new_zygote(dir: &Path) -> Result<(), String> {
    no_new_privs()?;
    install_allow_all(2).map_err(|e| format!("seccomp: errno {e}"))?;
    confined_after_a_run(dir, refuse_symlinks)
}

/// Runs once (the zygote starts; links are made), lets `confine` refuse this process every
/// symbolic link's creation, and checks that the next command is refused one too, as a plain
/// child is, through a new zygote.
fn confined_after_a_run(
    dir: &Path,
    confine: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let script = symlink_script(dir);
    check("before, links are made", output_of(dir, &script)? == "made")?;
    let old = zygote_pid()?;
    confine()?;
    answers_as_a_plain_child(dir, &script, "refused", old)
}

/// An agent that enters a Landlock domain of its own (with the landlock crate, not
/// `confine_self`) after its zygote started: its commands must stay inside it, as its plain
/// children do.
fn landlock_domain_gets_a_new_zygote(dir: &Path) -> Result<(), String> {
    no_new_privs()?;
    enter_a_domain_after_a_run(dir)
}

/// The same, for an agent under a seccomp filter that refuses `kcmp` (as container runtimes'
/// profiles do for processes without `CAP_SYS_PTRACE`), in place since before its first run.
fn landlock_domain_without_kcmp_gets_a_new_zygote(dir: &Path) -> Result<(), String> {
    no_new_privs()?;
    refuse_syscalls(&[libc::SYS_kcmp])?;
    // SAFETY: kcmp takes integers.
    let refused = unsafe { libc::syscall(libc::SYS_kcmp, 0, 0, 0, 0, 0) } < 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    check("the filter refuses kcmp", refused)?;
    enter_a_domain_after_a_run(dir)
}

/// Runs once (the zygote starts), enters a Landlock domain that refuses every symbolic link's
/// creation, and checks that the next command is refused one too, through a new zygote.
fn enter_a_domain_after_a_run(dir: &Path) -> Result<(), String> {
    use landlock::{AccessFs, Ruleset, RulesetAttr, RulesetStatus};
    confined_after_a_run(dir, || {
        let status = Ruleset::default()
            .handle_access(AccessFs::MakeSym)
            .and_then(|r| r.create())
            .and_then(|r| r.restrict_self())
            .map_err(|e| format!("landlock: {e}"))?;
        check(
            "the agent's domain is enforced",
            status.ruleset == RulesetStatus::FullyEnforced,
        )
    })
}

/// Unshares `flags` on the calling thread, or says why the case cannot run (root only).
fn unshare_or_skip(flags: libc::c_int) -> Result<bool, String> {
    // SAFETY: unshare takes integer flags.
    if unsafe { libc::unshare(flags) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EPERM) {
        eprintln!("skipped: unshare needs CAP_SYS_ADMIN: {e}");
        return Ok(false);
    }
    Err(format!("unshare: {e}"))
}

/// An agent that moves into a network namespace of its own (no network but loopback) after
/// its zygote started: a command allowed the network must see the agent's, as its plain
/// children do, not the host's. Root only.
fn network_namespace_gets_a_new_zygote(dir: &Path) -> Result<(), String> {
    // The interfaces the command's network namespace has (its /proc/net/dev).
    let script = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' '";
    network_namespace_case(dir, script)
}

/// [`network_namespace_gets_a_new_zygote`] with `script` printing the interfaces.
fn network_namespace_case(dir: &Path, script: &str) -> Result<(), String> {
    let policy = ToolPolicy::from_json_str(
        "case",
        &format!(
            r#"{{"net": "allow", "fs": {{"write": ["{}/**"]}}}}"#,
            dir.display()
        ),
    )
    .expect("valid policy");
    let seen = || -> Result<String, String> {
        let out = run(&policy, &sh(script), &hardened()).map_err(|e| e.to_string())?;
        check(&format!("{script}: {out:?}"), out.success())?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let before = seen()?;
    let old = zygote_pid()?;
    if !unshare_or_skip(libc::CLONE_NEWNET)? {
        return Ok(());
    }
    let control = unconfined_output(script)?;
    check(
        &format!("the agent's new namespace has loopback only: {control:?} (host: {before:?})"),
        control == "lo",
    )?;
    let now = seen()?;
    check(
        &format!("the command sees the agent's network, {control:?}: {now:?}"),
        now == control,
    )?;
    check("a new zygote serves", zygote_pid()? != old)
}

/// An agent that enters a mount namespace of its own and hides a directory, then changes its
/// root directory (`chroot`), each after a zygote started: its commands must see what it sees,
/// as its plain children do. Root only.
fn mount_namespace_and_root_get_a_new_zygote(dir: &Path) -> Result<(), String> {
    let hidden = dir.join("hidden");
    std::fs::create_dir(&hidden).map_err(|e| e.to_string())?;
    std::fs::write(hidden.join("file"), "x").map_err(|e| e.to_string())?;
    let list = format!("ls {} | tr '\\n' ' '", hidden.display());
    check("the file is listed", output_of(dir, &list)? == "file")?;
    let old = zygote_pid()?;
    if !unshare_or_skip(libc::CLONE_NEWNS)? {
        return Ok(());
    }
    // Nothing done below reaches the host's mounts.
    mount("none", Path::new("/"), "", libc::MS_REC | libc::MS_PRIVATE)?;
    mount("none", &hidden, "tmpfs", 0)?;
    answers_as_a_plain_child(dir, &list, "", old)?;

    // A root directory of the agent's own: a tmpfs holding the host's directories (so that the
    // helper can start there) and a mark of its own.
    let jail = dir.join("jail");
    std::fs::create_dir(&jail).map_err(|e| e.to_string())?;
    mount("none", &jail, "tmpfs", 0)?;
    for entry in std::fs::read_dir("/").map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        if !entry.file_type().map_err(|e| e.to_string())?.is_dir() {
            continue;
        }
        let target = jail.join(entry.file_name());
        std::fs::create_dir(&target).map_err(|e| e.to_string())?;
        mount(
            &entry.path().to_string_lossy(),
            &target,
            "",
            libc::MS_BIND | libc::MS_REC,
        )?;
    }
    for link in ["bin", "lib", "lib64", "sbin"] {
        if let Ok(to) = std::fs::read_link(Path::new("/").join(link)) {
            let _ = std::os::unix::fs::symlink(to, jail.join(link));
        }
    }
    std::fs::write(jail.join("jail-mark"), "").map_err(|e| e.to_string())?;
    let mark = "test -e /jail-mark && echo inside || echo outside";
    check(
        "outside the new root, the mark is not seen",
        output_of(dir, mark)? == "outside",
    )?;
    let old = zygote_pid()?;
    let jail_c = std::ffi::CString::new(jail.to_string_lossy().as_bytes()).expect("no NUL");
    // SAFETY: valid C strings.
    if unsafe { libc::chroot(jail_c.as_ptr()) } != 0 || unsafe { libc::chdir(c"/".as_ptr()) } != 0 {
        return Err(format!("chroot: {}", std::io::Error::last_os_error()));
    }
    answers_as_a_plain_child(dir, mark, "inside", old)
}

/// An agent that asks for a new pid namespace for its children (`unshare(CLONE_NEWPID)`)
/// after its zygote started: its commands start in it, as its plain children do (one level
/// deeper than the agent). Root only.
fn pid_namespace_gets_a_new_zygote(dir: &Path) -> Result<(), String> {
    let script = "grep NSpid /proc/self/status | wc -w";
    let first = output_of(dir, script)?;
    let old = zygote_pid()?;
    if !unshare_or_skip(libc::CLONE_NEWPID)? {
        return Ok(());
    }
    // The first process started after the unshare is the namespace's init, which must live
    // as long as the namespace is used: the run comes first, its new zygote is that init.
    let seen = output_of(dir, script)?;
    let control = unconfined_output(script)?;
    check(
        &format!("the command is as deep as a plain child, {control}: {seen} (before: {first})"),
        seen == control && seen != first,
    )?;
    check("a new zygote serves", zygote_pid()? != old)?;
    check(
        "the next run works as well",
        output_of(dir, script)? == control,
    )?;
    // A change that needs another zygote (a nice value below the zygote's) retires the
    // namespace's init, and the namespace ends with it: the run fails, as a plain child does,
    // rather than run anywhere else.
    set_thread_nice(-1)?;
    let after = run_sh(dir, script);
    check(
        &format!("a run after the namespace's init was retired fails: {after:?}"),
        after.is_err() || after.is_ok_and(|out| !out.success()),
    )?;
    check("so does a plain child", run_unconfined(script).is_err())
}

/// The seccomp and Landlock cases again, as uid 65534 (when this is root): an unprivileged
/// agent's zygote passes other kernel checks than root's (no capability covers its `kcmp`).
fn unprivileged_agent_confining_itself(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: this process is unprivileged already, as those cases are");
        return Ok(());
    }
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let as_nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    let reachable = Command::new(as_nobody[0])
        .args(&as_nobody[1..])
        .args(["test", "-x"])
        .arg(&me)
        .status()
        .is_ok_and(|s| s.success())
        && Command::new(as_nobody[0])
            .args(&as_nobody[1..])
            .args(["test", "-x", HELPER])
            .status()
            .is_ok_and(|s| s.success());
    if !reachable {
        kernel::missing(
            "setpriv (util-linux) and a checkout that uid 65534 can reach (this test and the \
             helper) are needed for the unprivileged pass",
        );
        return Ok(());
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    for case in [
        "a_zygote_never_serves_an_agent_that_added_a_seccomp_filter",
        "a_zygote_never_serves_an_agent_that_entered_a_landlock_domain",
        "a_zygote_never_serves_an_agent_that_entered_a_landlock_domain_under_a_filter_refusing_kcmp",
    ] {
        let sub = dir.join(case);
        std::fs::create_dir(&sub).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o777))
            .map_err(|e| e.to_string())?;
        let out = Command::new(as_nobody[0])
            .args(&as_nobody[1..])
            .arg(&me)
            .env(CASE_VAR, case)
            .env(DIR_VAR, &sub)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        check(
            &format!(
                "{case} as uid 65534: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            out.status.success(),
        )?;
    }
    Ok(())
}

/// An agent that sets memory-deny-write-execute (`PR_SET_MDWE`, which its children and the
/// programs they start inherit, and which no process can unset) after its zygote started: its
/// commands must be refused a writable and executable mapping, as its plain children are.
fn memory_deny_write_execute_gets_a_new_zygote(dir: &Path) -> Result<(), String> {
    const PR_SET_MDWE: libc::c_int = 65;
    const PR_MDWE_REFUSE_EXEC_GAIN: libc::c_ulong = 1;
    let script = "python3 -c 'import mmap
try:
    mmap.mmap(-1, 4096, prot=7)
    print(\"mapped\")
except PermissionError:
    print(\"refused\")'";
    if unconfined_output(script)? != "mapped" {
        eprintln!("skipped: python3 is needed to try a writable and executable mapping");
        return Ok(());
    }
    check(
        "before, the command maps writable and executable memory",
        output_of(dir, script)? == "mapped",
    )?;
    let old = zygote_pid()?;
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) } != 0 {
        kernel::missing(&format!(
            "PR_SET_MDWE (Linux 6.3): {}",
            std::io::Error::last_os_error()
        ));
        return Ok(());
    }
    answers_as_a_plain_child(dir, script, "refused", old)?;
    strict_prints(dir, script, "refused", "refusal")
}

/// An agent that disables transparent huge pages (`PR_SET_THP_DISABLE`) and offers all its
/// memory to same-page merging (`PR_SET_MEMORY_MERGE`) after its zygote started: both belong to
/// the address space, which a plain child keeps and its `execve` carries, so the next command
/// has them as a plain child and a strict run's command do, through a new zygote. On a kernel
/// without per-process merging (before 6.4, or without KSM) only the first is compared.
fn memory_flags_get_a_new_zygote(dir: &Path) -> Result<(), String> {
    const PR_SET_MEMORY_MERGE: libc::c_int = 67;
    let script = "grep -h -e THP_enabled -e ksm_merge_any /proc/self/status /proc/self/ksm_stat \
        2>/dev/null | tr -s '\t ' ' '";
    let before = unconfined_output(script)?;
    if !before.starts_with("THP_enabled: 1") {
        eprintln!("skipped: this kernel shows no transparent huge pages to turn off: {before:?}");
        return Ok(());
    }
    let old = before_the_change(dir, script, &before, "flags")?;
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0 {
        return Err(format!(
            "PR_SET_THP_DISABLE: {}",
            std::io::Error::last_os_error()
        ));
    }
    let merging = before.contains("ksm_merge_any: no")
        // SAFETY: as above.
        && unsafe { libc::prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) } == 0;
    if !merging {
        eprintln!("note: per-process memory merging is not on this kernel; THP alone compared");
    }
    let want = if merging {
        "THP_enabled: 0\nksm_merge_any: yes"
    } else {
        "THP_enabled: 0"
    };
    answers_as_a_plain_child(dir, script, want, old)?;
    strict_prints(dir, script, want, "address space flags")
}

/// An agent that narrows its core dump filter (`/proc/self/coredump_filter`, which mappings a
/// core dump holds) after its zygote started: the filter belongs to the address space, which a
/// plain child keeps and its `execve` carries into the program's, so the next command has it as
/// a plain child and a strict run's command do, through a new zygote.
fn dump_filter_follows_the_agent(dir: &Path) -> Result<(), String> {
    let script = "cat /proc/self/coredump_filter";
    let before = unconfined_output(script)?;
    let Ok(filter) = u32::from_str_radix(&before, 16) else {
        eprintln!("skipped: this kernel shows no core dump filter: {before:?}");
        return Ok(());
    };
    let old = before_the_change(dir, script, &before, "core dump filter")?;
    // Leave out anonymous shared memory, or take it in where the filter had left it out.
    let narrowed = filter ^ 0x2;
    std::fs::write("/proc/self/coredump_filter", format!("{narrowed:#x}"))
        .map_err(|e| format!("writing /proc/self/coredump_filter: {e}"))?;
    let want = format!("{narrowed:08x}");
    answers_as_a_plain_child(dir, script, &want, old)?;
    strict_prints(dir, script, &want, "core dump filter")
}

/// An agent that turns speculative store bypass off for its thread after its zygote started
/// (`PR_SET_SPECULATION_CTRL`, a Spectre v4 mitigation that its plain children keep across
/// `execve`): its next command runs mitigated too, through a new zygote. Turned off only until
/// the next `execve` (`PR_SPEC_DISABLE_NOEXEC`), a plain child's program runs without it, and
/// so does the command, through the same zygote (no new one at each run). Then the same for
/// indirect branch speculation. Skipped on a CPU or kernel where the thread cannot choose (not
/// affected, or the mitigation fixed at boot).
fn speculation_mitigation_follows_the_agent(dir: &Path) -> Result<(), String> {
    const PR_SET_SPECULATION_CTRL: libc::c_int = 53;
    const PR_SPEC_STORE_BYPASS: libc::c_ulong = 0;
    const PR_SPEC_INDIRECT_BRANCH: libc::c_ulong = 1;
    const PR_SPEC_DISABLE: libc::c_ulong = 1 << 2;
    const PR_SPEC_DISABLE_NOEXEC: libc::c_ulong = 1 << 4;
    let script = "grep -h Speculation_Store_Bypass /proc/self/status | tr -s '\\t ' ' '";
    let (vulnerable, mitigated) = (
        "Speculation_Store_Bypass: thread vulnerable",
        "Speculation_Store_Bypass: thread mitigated",
    );
    if unconfined_output(script)? != vulnerable {
        eprintln!("skipped: this CPU or kernel lets no thread choose speculative store bypass");
        return Ok(());
    }
    check(
        "before, the command's store bypass is a plain child's",
        output_of(dir, script)? == vulnerable,
    )?;
    let z = zygote_pid()?;
    let set = |feature: libc::c_ulong, value: libc::c_ulong| -> Result<(), String> {
        // SAFETY: prctl with integer arguments, on this case process's only thread.
        let r = unsafe { libc::prctl(PR_SET_SPECULATION_CTRL, feature, value, 0, 0) };
        if r != 0 {
            return Err(format!(
                "PR_SET_SPECULATION_CTRL({feature}, {value}): {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    };
    set(PR_SPEC_STORE_BYPASS, PR_SPEC_DISABLE_NOEXEC)?;
    check(
        "turned off until the next execve: a plain child's program is not mitigated",
        unconfined_output(script)? == vulnerable,
    )?;
    check("nor is the command", output_of(dir, script)? == vulnerable)?;
    check("the same zygote serves", zygote_pid()? == z)?;
    set(PR_SPEC_STORE_BYPASS, PR_SPEC_DISABLE)?;
    answers_as_a_plain_child(dir, script, mitigated, z)?;
    strict_prints(dir, script, mitigated, "store bypass")?;
    // Indirect branch speculation, where the thread may choose it too.
    let script = "grep -h SpeculationIndirectBranch /proc/self/status | tr -s '\\t ' ' '";
    let before = unconfined_output(script)?;
    if before != "SpeculationIndirectBranch: conditional enabled" {
        eprintln!("note: indirect branch speculation is not the thread's choice here: {before:?}");
        return Ok(());
    }
    let z = zygote_pid()?;
    set(PR_SPEC_INDIRECT_BRANCH, PR_SPEC_DISABLE)?;
    let disabled = "SpeculationIndirectBranch: conditional disabled";
    answers_as_a_plain_child(dir, script, disabled, z)?;
    strict_prints(dir, script, disabled, "indirect branch speculation")
}

/// An agent that binds its thread's memory to one NUMA node (`set_mempolicy`, as `numactl
/// --membind` does for the program it starts) after its zygote started: a plain child's
/// program keeps the binding across `execve`, and so does the next command, through a new
/// zygote. The binding shows as the policy of the command's mappings in its `numa_maps`. The
/// node is the lowest this thread may allocate on.
fn numa_policy_follows_the_agent(dir: &Path) -> Result<(), String> {
    const MPOL_F_MEMS_ALLOWED: libc::c_ulong = 1 << 2;
    if !Path::new("/proc/self/numa_maps").exists() {
        eprintln!("skipped: this kernel has no NUMA memory policies (/proc/self/numa_maps)");
        return Ok(());
    }
    let script = "head -n 1 /proc/self/numa_maps | cut -d ' ' -f 2";
    check(
        "before, the command's policy is a plain child's",
        output_of(dir, script)? == "default" && unconfined_output(script)? == "default",
    )?;
    let z = zygote_pid()?;
    let syscall_result = |r: libc::c_long, what: &str| {
        if r != 0 {
            return Err(format!("{what}: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    };
    let mut allowed = [0 as libc::c_ulong; 16];
    // SAFETY: get_mempolicy writes at most 1024 bits of node mask, which `allowed` holds; the
    // mode pointer may be null.
    syscall_result(
        unsafe {
            libc::syscall(
                libc::SYS_get_mempolicy,
                std::ptr::null_mut::<libc::c_int>(),
                allowed.as_mut_ptr(),
                1024 as libc::c_ulong,
                std::ptr::null_mut::<libc::c_void>(),
                MPOL_F_MEMS_ALLOWED,
            )
        },
        "get_mempolicy(MPOL_F_MEMS_ALLOWED)",
    )?;
    let node = (0..1024)
        .find(|n| allowed[n / 64] & (1 << (n % 64)) != 0)
        .ok_or("this thread may allocate on no node")?;
    let mut only = [0 as libc::c_ulong; 16];
    only[node / 64] = 1 << (node % 64);
    // SAFETY: set_mempolicy of this thread reads 1024 bits of node mask from `only`.
    syscall_result(
        unsafe {
            libc::syscall(
                libc::SYS_set_mempolicy,
                libc::MPOL_BIND,
                only.as_ptr(),
                1024 as libc::c_ulong,
            )
        },
        &format!("set_mempolicy(MPOL_BIND, node {node})"),
    )?;
    let bound = format!("bind:{node}");
    answers_as_a_plain_child(dir, script, &bound, z)?;
    strict_prints(dir, script, &bound, "NUMA policy")
}

/// An agent that leaves its session after its zygote started (`setsid`, as a daemon detaching
/// from its terminal does): a plain child's program is in the new session, and so is the next
/// command, through a new zygote, not in the old session and under its controlling terminal.
/// Not compared with a strict run: its command, in a pid namespace of its own, sees no session
/// id from outside it.
fn session_follows_the_agent(dir: &Path) -> Result<(), String> {
    let script = "cut -d ' ' -f 6 /proc/self/stat";
    // SAFETY: getsid of this process.
    let old = unsafe { libc::getsid(0) };
    check(
        &format!("a plain child is in the agent's session {old}"),
        unconfined_output(script)? == old.to_string(),
    )?;
    let z = before_the_change(dir, script, &old.to_string(), "session")?;
    // SAFETY: setsid of this case process, which leads no process group (its starter's is
    // its own).
    let new = unsafe { libc::setsid() };
    if new < 0 {
        return Err(format!("setsid: {}", std::io::Error::last_os_error()));
    }
    check(&format!("a new session {new}, not {old}"), new != old)?;
    answers_as_a_plain_child(dir, script, &new.to_string(), z)
}

/// A root agent that sets its audit login uid after its zygote started (as a login service
/// does for the session it starts): a plain child's program keeps it, and the audit log
/// records it as the `auid` of all that program does. The next command has it too, through a
/// new zygote, not the unset one its zygote started with. Skipped where this process may not
/// set it (it needs `CAP_AUDIT_CONTROL`, or the login uid is already set and immutable). Not
/// compared with a strict run: its user namespace maps no login uid but its own.
fn login_uid_follows_the_agent(dir: &Path) -> Result<(), String> {
    let script = "cat /proc/self/loginuid";
    if !Path::new("/proc/self/loginuid").exists() {
        eprintln!("skipped: this kernel has no audit login uid (/proc/self/loginuid)");
        return Ok(());
    }
    let before = unconfined_output(script)?;
    let z = before_the_change(dir, script, &before, "login uid")?;
    let uid = if before == "4242" { "4343" } else { "4242" };
    if let Err(e) = std::fs::write("/proc/self/loginuid", uid) {
        eprintln!("skipped: this process may not set its login uid: {e}");
        return Ok(());
    }
    answers_as_a_plain_child(dir, script, uid, z)
}

/// A run whose process group keeps a member after its command ended: the command's
/// background child is traced by this process (root), so once the group kill reaches it, it
/// stays a zombie that only its tracer may reap, and the zygote cannot empty the group. The
/// run is reported all the same, after the zygote's drain limit (2 s), not never; and since
/// the zygote could not see every process of the run gone, the run's scratch directory is not
/// lent again: the next run gets another. The control: runs that drained share one. Skipped
/// where this process may not trace the command (not root, or Yama forbids it).
fn undrained_group_taints_its_scratch(dir: &Path) -> Result<(), String> {
    let tmpdir = "echo $TMPDIR";
    let first = output_of(dir, tmpdir)?;
    check(
        &format!("runs that drained share one scratch directory ({first})"),
        output_of(dir, tmpdir)? == first,
    )?;
    let (pid_file, go) = (dir.join("pid"), dir.join("go"));
    let script = format!(
        "sleep 30 & echo $! > {pid}; while [ ! -e {go} ]; do sleep 0.02; done; echo $TMPDIR",
        pid = pid_file.display(),
        go = go.display()
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let runner = {
        let dir = dir.to_path_buf();
        std::thread::spawn(move || {
            let _ = tx.send(run_sh(&dir, &script).map_err(|e| e.to_string()));
        })
    };
    let start = Instant::now();
    while std::fs::read_to_string(&pid_file).map_or(true, |p| !p.ends_with('\n')) {
        if start.elapsed() > Duration::from_secs(10) {
            return Err("the command never wrote its child's pid".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let child: libc::pid_t = std::fs::read_to_string(&pid_file)
        .map_err(|e| e.to_string())?
        .trim()
        .parse()
        .map_err(|e| format!("the child's pid: {e}"))?;
    // SAFETY: PTRACE_SEIZE of a process by its pid, with no options.
    let seized = unsafe { libc::ptrace(libc::PTRACE_SEIZE, child, 0, 0) } == 0;
    let why = std::io::Error::last_os_error();
    std::fs::write(&go, "").map_err(|e| e.to_string())?;
    let ended = Instant::now();
    let out = rx
        .recv_timeout(Duration::from_secs(20))
        .map_err(|_| "the run never ended".to_string())?;
    let took = ended.elapsed();
    runner.join().map_err(|_| "the run's thread panicked")?;
    if !seized {
        eprintln!("skipped: this process may not trace the command's child: {why}");
        return Ok(());
    }
    let out = out?;
    let used = String::from_utf8_lossy(&out.stdout).trim().to_string();
    check(
        &format!(
            "the run succeeded and ended after the drain limit: {took:?}, exit {:?}, TMPDIR {used}",
            out.code
        ),
        out.success() && used == first && took >= Duration::from_millis(1900),
    )?;
    let mut status = 0;
    // SAFETY: reaping our tracee, which the group kill ended.
    let reaped = unsafe { libc::waitpid(child, &mut status, libc::__WALL) };
    check(
        &format!("the traced child was killed by the group kill: {reaped} {status:#x}"),
        reaped == child && libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL,
    )?;
    let next = output_of(dir, tmpdir)?;
    check(
        &format!("the next run has another scratch directory ({next} after {first})"),
        next != first,
    )
}

/// An agent under a seccomp filter whose own `/proc` is closed to it (a Landlock domain that
/// reads every top-level directory but `/proc`, entered before its first run) adds another
/// filter after its zygote started. It cannot count its filters, so its next command must run
/// under the new one all the same, through a new zygote.
fn uncounted_filter_gets_a_new_zygote(dir: &Path) -> Result<(), String> {
    no_new_privs()?;
    install_allow_all(2).map_err(|e| format!("seccomp: errno {e}"))?;
    close_proc_to_self()?;
    confined_after_a_run(dir, refuse_symlinks)
}

/// Enters a Landlock domain that reads every top-level directory but `/proc` (NO_NEW_PRIVS
/// must be set), and checks that this process can no longer read its own `/proc` status.
fn close_proc_to_self() -> Result<(), String> {
    use landlock::{AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr};
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let mut ruleset = Ruleset::default()
        .handle_access(read)
        .and_then(|r| r.create())
        .map_err(|e| format!("landlock: {e}"))?;
    for entry in std::fs::read_dir("/").map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path == Path::new("/proc") {
            continue;
        }
        let Ok(fd) = PathFd::new(&path) else {
            continue;
        };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, read))
            .map_err(|e| format!("landlock rule {}: {e}", path.display()))?;
    }
    ruleset
        .restrict_self()
        .map_err(|e| format!("landlock: {e}"))?;
    check(
        "this process cannot read its own /proc status",
        std::fs::read("/proc/thread-self/status").is_err(),
    )
}

/// An agent whose own `/proc` is closed to it moves into a network namespace of its own after
/// its zygote started: it cannot name its namespaces, so a command allowed the network must
/// still see the agent's, through a new zygote. Root only.
fn unnamed_network_namespace_gets_a_new_zygote(dir: &Path) -> Result<(), String> {
    // The interfaces, through netlink: the command cannot read /proc either.
    let script = "python3 -c 'import socket; print(\" \".join(sorted(n for _, n in socket.if_nameindex())))'";
    if unconfined_output(script)?.is_empty() {
        eprintln!("skipped: python3 is needed to list the interfaces without /proc");
        return Ok(());
    }
    no_new_privs()?;
    close_proc_to_self()?;
    network_namespace_case(dir, script)
}

/// Whether the running zygote is the exec'd helper (its command line names the hidden
/// subcommand) rather than a fork of this process (whose command line is this case's).
fn zygote_is_the_helper() -> Result<bool, String> {
    let pid = zygote_pid()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).map_err(|e| e.to_string())?;
    let sub = sandbox::trampoline::SUBCOMMAND.as_bytes();
    Ok(cmdline.windows(sub.len()).any(|w| w == sub))
}

/// A one-shot caller of one thread (this case process) forks its zygote while it holds little
/// memory, and execs the helper once it holds more than 16 MiB: a fork copies the page tables
/// of everything resident, which would cost more than the helper's start.
fn one_shot_fork_only_while_small(dir: &Path) -> Result<(), String> {
    let once = hardened().one_shot();
    let policy = policy_writing(dir);
    let out = run(&policy, &sh("true"), &once).map_err(|e| e.to_string())?;
    check(&format!("a small caller's run: {out:?}"), out.success())?;
    check(
        "a small caller of one thread forks its zygote",
        !zygote_is_the_helper()?,
    )?;
    zygote::shut_down();
    // 64 MiB, every page touched, so resident.
    let ballast = vec![1u8; 64 << 20];
    let out = run(&policy, &sh("true"), &once).map_err(|e| e.to_string())?;
    check(&format!("a large caller's run: {out:?}"), out.success())?;
    check(
        "a caller with 64 MiB resident execs the helper",
        zygote_is_the_helper()?,
    )?;
    std::hint::black_box(&ballast);
    Ok(())
}

/// The wait status of this process's child `pid` once it ends, waiting at most 5 s.
fn wait_for_child(pid: libc::pid_t) -> Result<i32, String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut status = 0;
        // SAFETY: waits for a child of this process.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r > 0 {
            return Ok(status);
        }
        if r < 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        if Instant::now() > deadline {
            return Err("still running after 5 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Records, at a normal exit, which process ran the exit handlers of [`one_shot_role`].
extern "C" fn note_exit() {
    if let Some(dir) = std::env::var_os(DIR_VAR) {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        let _ = std::fs::write(Path::new(&dir).join(format!("exit-{me}")), "");
    }
}

/// Not a test: registers an exit handler, makes one one-shot run (its zygote a fork of this
/// process, which then holds the handler too), writes the zygote's pid and exits normally.
fn one_shot_role(dir: &Path) -> Result<(), String> {
    // SAFETY: registers a function that only writes a file.
    unsafe { libc::atexit(note_exit) };
    let out = run(&policy_writing(dir), &sh("true"), &hardened().one_shot())
        .map_err(|e| e.to_string())?;
    check(&format!("the role's run: {out:?}"), out.success())?;
    check("the role's zygote is a fork", !zygote_is_the_helper()?)?;
    std::fs::write(dir.join("zygote"), zygote_pid()?.to_string()).map_err(|e| e.to_string())
}

/// A forked zygote ends with `_exit`: the exit handlers it holds, copied from its caller, are
/// the caller's, and run once, in the caller (the control: the caller's own normal exit runs
/// them). Nor does it run the caller's thread-local destructors, which would drop descriptors
/// the zygote closed at its start: with `exit` in its place, the zygote aborted ("IO Safety
/// violation"). This case is a child subreaper, so the orphaned zygote's status comes here.
fn forked_zygote_skips_exit_handlers(dir: &Path) -> Result<(), String> {
    // SAFETY: a flag on this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) } != 0 {
        return Err(format!("subreaper: {}", std::io::Error::last_os_error()));
    }
    let out = cases::process_of(CASE_VAR, DIR_VAR, ONE_SHOT_ROLE, dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    check(
        &format!(
            "the one-shot caller ran: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        out.status.success(),
    )?;
    let zygote: u32 = std::fs::read_to_string(dir.join("zygote"))
        .map_err(|e| e.to_string())?
        .trim()
        .parse()
        .map_err(|e| format!("the zygote's pid: {e}"))?;
    let status = wait_for_child(zygote as libc::pid_t)
        .map_err(|e| format!("the zygote {zygote} did not end with its caller: {e}"))?;
    check(
        &format!("the zygote exits with status 0, not by a signal: {status:#x}"),
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    )?;
    let mut exits: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("exit-"))
        .collect();
    exits.sort();
    check(
        &format!("the caller's exit ran its handler once, the zygote's none: {exits:?}"),
        exits.len() == 1 && exits[0] != format!("exit-{zygote}"),
    )
}

/// Where [`note_signal`] writes: set before its handler is installed.
static SIGNAL_NOTE: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();

/// A signal handler that appends a byte to [`SIGNAL_NOTE`] (async-signal-safe calls only).
extern "C" fn note_signal(_: libc::c_int) {
    if let Some(path) = SIGNAL_NOTE.get() {
        // SAFETY: open, write and close are async-signal-safe; the path lives for the process.
        unsafe {
            let fd = libc::open(
                path.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
                0o600,
            );
            if fd >= 0 {
                libc::write(fd, b"x".as_ptr().cast(), 1);
                libc::close(fd);
            }
        }
    }
}

/// A forked zygote takes signals as the exec'd helper would: the caller's handlers are gone
/// (an `execve` drops them), so a signal sent to it never runs the caller's code there. The
/// caller (this case, one thread) handles SIGUSR1; after a one-shot run, SIGUSR1 sent to its
/// forked zygote ends the zygote by its default action, and the handler wrote nothing. The
/// control: the same signal sent to the caller runs its handler.
fn forked_zygote_drops_signal_handlers(dir: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let note = dir.join("handled");
    SIGNAL_NOTE
        .set(std::ffi::CString::new(note.as_os_str().as_bytes()).map_err(|e| e.to_string())?)
        .map_err(|_| "the note's path was set twice".to_string())?;
    // SAFETY: installs a handler that makes async-signal-safe calls only.
    if unsafe {
        libc::signal(
            libc::SIGUSR1,
            note_signal as *const () as libc::sighandler_t,
        )
    } == libc::SIG_ERR
    {
        return Err(format!("signal: {}", std::io::Error::last_os_error()));
    }
    let out = run(&policy_writing(dir), &sh("true"), &hardened().one_shot())
        .map_err(|e| e.to_string())?;
    check(&format!("the run: {out:?}"), out.success())?;
    check(
        "the zygote is a fork of this case",
        !zygote_is_the_helper()?,
    )?;
    let zygote = zygote_pid()? as libc::pid_t;
    // SAFETY: signals this case's own child.
    if unsafe { libc::kill(zygote, libc::SIGUSR1) } != 0 {
        return Err(format!("kill: {}", std::io::Error::last_os_error()));
    }
    let status = wait_for_child(zygote);
    check(
        &format!(
            "the caller's handler never ran in the zygote (it wrote {:?})",
            std::fs::read(&note).ok()
        ),
        !note.exists(),
    )?;
    check(
        &format!("SIGUSR1's default action ended the zygote: {status:?}"),
        status.is_ok_and(|s| libc::WIFSIGNALED(s) && libc::WTERMSIG(s) == libc::SIGUSR1),
    )?;
    // SAFETY: signals this process, whose handler makes async-signal-safe calls only.
    unsafe { libc::raise(libc::SIGUSR1) };
    check(
        "control: the signal runs the handler in the caller",
        std::fs::read(&note).is_ok_and(|b| b == b"x"),
    )
}
