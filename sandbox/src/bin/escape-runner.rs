//! `escape-runner`: the escape suite's long-lived runner (`tests/escapes.rs`).
//!
//! `policy-sandbox run` is its process's only run, so it builds its namespaces and hardened
//! ruleset for itself and keeps nothing. An agent runs many tools from one process, and its
//! runs take what a previous run left: a strict view copied from a template (held in a user
//! namespace of the runner's own when it lacks `CAP_SYS_ADMIN`), view and network namespaces
//! lent again, a hardened scratch slot and zygote. This binary runs a command the way an agent
//! does, so that every escape is also tried against those:
//!
//! ```text
//! escape-runner --policy FILE --profile strict|hardened -- CMD [ARGS...]
//! ```
//!
//! It first runs CMD's program alone (no arguments) under the same policy, so that the second
//! run, CMD with its arguments, gets what the first gave back. Before the second run it prints
//! on stderr one line that says where the runs' view and network namespace come from:
//!
//! ```text
//! escape-runner: view=HeldTemplate lease=Some(Lending) netns=Some(Held)
//! ```
//!
//! Its exit status is that of `policy-sandbox run`: CMD's own, 125 with a `refused:` line when
//! the sandbox refuses. CMD's output is captured and written out once the run has ended.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use policy_runtime::protected::{set_process_list, ProtectedKind, ProtectedPaths};
use policy_runtime::ToolEntry;
use sandbox::runner::{prepared_for, run, RunError, RunOptions};
use sandbox::Profile;

#[derive(Parser)]
#[command(name = "escape-runner")]
struct Cli {
    /// A single-tool JSON or TOML policy.
    #[arg(long)]
    policy: PathBuf,
    /// strict or hardened.
    #[arg(long)]
    profile: Profile,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    cmd: Vec<OsString>,
}

fn main() -> ExitCode {
    sandbox::trampoline::serve_if_requested();
    let cli = Cli::parse();
    let policy = match ToolEntry::load(&cli.policy, None) {
        Ok(entry) => entry.policy,
        Err(e) => return refused(format!("cannot load the policy: {e}")),
    };
    // The same protected list `policy-sandbox run` keeps: the defaults and the policy file.
    let mut protected = ProtectedPaths::for_this_process();
    let file = std::path::absolute(&cli.policy).unwrap_or_else(|_| cli.policy.clone());
    if let Err(e) = protected.add_file(file, ProtectedKind::PolicyFile) {
        return refused(format!("the policy file: {e}"));
    }
    set_process_list(protected);
    let options = RunOptions::default().profile(cli.profile);
    let warm_up = &cli.cmd[..1];
    if let Err(e) = run(&policy, warm_up, &options) {
        // The run below meets the same refusal and reports it.
        eprintln!("escape-runner: the first run: {e}");
    }
    if let Ok(prepared) = prepared_for(&policy, &cli.cmd, &options) {
        eprintln!(
            "escape-runner: view={} lease={:?} netns={:?}",
            prepared
                .view_build()
                .map_or_else(|| "None".to_string(), |v| format!("{v:?}")),
            prepared.view_lease(),
            prepared.netns_source()
        );
    }
    match run(&policy, &cli.cmd, &options) {
        Ok(out) => {
            let _ = std::io::stdout().write_all(&out.stdout);
            let _ = std::io::stderr().write_all(&out.stderr);
            ExitCode::from(out.status_code().clamp(0, 255) as u8)
        }
        Err(e @ (RunError::Exec { .. } | RunError::StatusLost(_))) => {
            eprintln!("escape-runner: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
        Err(e) => refused(e.to_string()),
    }
}

fn refused(why: String) -> ExitCode {
    eprintln!("refused: {why}");
    ExitCode::from(125)
}
