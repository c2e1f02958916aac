//! `policy-sandbox`: run a command confined by a tool policy, show what this host can
//! enforce, or ask the in-process gate about one call (`policy-runtime/docs/cli.md`).
//!
//! ```text
//! policy-sandbox run --policy FILE [--tool NAME] [--profile strict|hardened] [PROTECTED] -- CMD [ARGS...]
//! policy-sandbox check [--json] [--policy FILE [--tool NAME]] [--profile strict|hardened] [PROTECTED]
//!   PROTECTED: [--protect PATH]... [--protect-tree PATH]... [--unprotect PATH]...
//! policy-sandbox gate --policy FILE --tool NAME --args JSON
//! ```
//!
//! `run` exits with CMD's status; 125 with a `refused:` line on stderr when the sandbox cannot
//! be set up or the host cannot enforce the policy (CMD does not start); 2 for a usage error.
//! `gate` asks the same registry an agent uses (gate, constraints, approval) without running
//! anything.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use policy_runtime::protected::{set_process_list, ProtectedKind, ProtectedPaths};
use policy_runtime::{ToolEntry, ToolPolicy};
use sandbox::hostcaps::HostSupport;
use sandbox::runner::{run, RunOptions, Stdio};
use sandbox::{Plan, Profile};

#[derive(Parser)]
#[command(
    name = "policy-sandbox",
    version,
    about = "Run commands confined by a tool policy"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Changes to the protected paths (the defaults of the current directory and `$HOME`, plus the
/// policy file).
#[derive(clap::Args)]
struct Protection {
    /// Also protect PATH (a file, or a directory by its name) from every write, even under a
    /// write root; repeatable.
    #[arg(long = "protect", value_name = "PATH")]
    protect: Vec<PathBuf>,
    /// Also protect the directory PATH and everything in it; repeatable.
    #[arg(long = "protect-tree", value_name = "PATH")]
    protect_tree: Vec<PathBuf>,
    /// Stop protecting PATH (an entry of the default list, exactly as listed); repeatable.
    #[arg(long = "unprotect", value_name = "PATH")]
    unprotect: Vec<PathBuf>,
}

impl Protection {
    /// The protected list of this run: the defaults, the policy file the runner loaded, and
    /// the command line's changes. Errors name the flag.
    fn list(&self, policy_file: &std::path::Path) -> Result<ProtectedPaths, String> {
        let mut list = ProtectedPaths::for_this_process();
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        list.add_file(
            absolute(&policy_file.to_path_buf()),
            ProtectedKind::PolicyFile,
        )
        .map_err(|e| format!("the policy file: {e}"))?;
        for p in &self.protect {
            list.add_file(absolute(p), ProtectedKind::Other)
                .map_err(|e| format!("--protect: {e}"))?;
        }
        for p in &self.protect_tree {
            list.add_tree(absolute(p), ProtectedKind::Other)
                .map_err(|e| format!("--protect-tree: {e}"))?;
        }
        for p in &self.unprotect {
            if !list.remove(absolute(p)) {
                return Err(format!(
                    "--unprotect: {} is not a protected path (see `protected` in the report)",
                    p.display()
                ));
            }
        }
        Ok(list)
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run CMD confined by the policy; exit with CMD's status (125: refused, 2: usage).
    ///
    /// Under an exec allow-list, CMD itself must be listed.
    Run {
        /// A manifest (with --tool), or a single-tool JSON or TOML policy.
        #[arg(long)]
        policy: PathBuf,
        /// The tool's name in the manifest.
        #[arg(long)]
        tool: Option<String>,
        /// strict (default) or hardened (no namespaces; only when asked for).
        #[arg(long)]
        profile: Option<Profile>,
        /// Print the enforcement report (JSON) on stderr before running: what this run enforces,
        /// including CMD's interpreter chain.
        #[arg(long)]
        report: bool,
        #[command(flatten)]
        protection: Protection,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        cmd: Vec<OsString>,
    },
    /// What this host can enforce, and the plan for a policy.
    Check {
        /// JSON output.
        #[arg(long)]
        json: bool,
        /// A policy to plan.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// The tool's name in the manifest.
        #[arg(long)]
        tool: Option<String>,
        /// The profile to plan for (default strict).
        #[arg(long)]
        profile: Option<Profile>,
        #[command(flatten)]
        protection: Protection,
    },
    /// The in-process decision for one call, as an agent's registry makes it: the argument
    /// gate, then the constraints of a fresh invocation (forbidden, max_invocations,
    /// only_after), then approval (no approver here, so requires_approval denies).
    /// Exit 0 allowed, 1 denied, 2 invalid.
    Gate {
        /// A manifest (the tool named by --tool), or a single-tool JSON or TOML policy.
        #[arg(long)]
        policy: PathBuf,
        /// The tool's name.
        #[arg(long)]
        tool: String,
        /// The call's arguments as JSON.
        #[arg(long)]
        args: String,
    },
}

fn main() -> ExitCode {
    sandbox::trampoline::serve_if_requested();
    // What the hardened profile leaves open is part of `run --help`, from the one list the
    // plan reports. Only help shows it, so only a command line asking for help builds it (every
    // `run` would pay for formatting it otherwise).
    let wants_help = std::env::args_os().any(|a| a == "-h" || a == "--help" || a == "help");
    let command = Cli::command().mut_subcommand("run", |run| {
        if wants_help {
            run.after_long_help(sandbox::plan::hardened_open_help())
                .after_help(sandbox::plan::hardened_open_help())
        } else {
            run
        }
    });
    let parsed = command
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // Usage errors exit 2 in every subcommand; 125 is kept for a policy or host the
            // sandbox refuses, which always comes with a `refused:` line.
            return ExitCode::from(match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ => 2,
            });
        }
    };
    match cli.command {
        Command::Run {
            policy,
            tool,
            profile,
            report,
            protection,
            cmd,
        } => {
            if let Err(e) = protection.list(&policy).map(set_process_list) {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
            run_cmd(policy, tool, profile, report, cmd)
        }
        Command::Check {
            json,
            policy,
            tool,
            profile,
            protection,
        } => {
            if let Some(path) = &policy {
                if let Err(e) = protection.list(path).map(set_process_list) {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            }
            check(json, policy, tool, profile)
        }
        Command::Gate { policy, tool, args } => gate(policy, tool, args),
    }
}

fn load(path: &PathBuf, tool: Option<&str>) -> Result<ToolPolicy, String> {
    load_entry(path, tool).map(|entry| entry.policy)
}

/// The tool's manifest entry, with its arguments' roles (none for a single-tool policy file).
fn load_entry(path: &PathBuf, tool: Option<&str>) -> Result<ToolEntry, String> {
    ToolEntry::load(path, tool).map_err(|e| {
        let mut text = String::new();
        let handler = miette_free_render(&e);
        text.push_str(&handler);
        text
    })
}

fn miette_free_render(e: &policy_runtime::LoadError) -> String {
    match (e.line(), e.column()) {
        (Some(l), Some(c)) => format!("{}:{l}:{c}: {}", e.file(), e.message()),
        (Some(l), None) => format!("{}:{l}: {}", e.file(), e.message()),
        _ => format!("{}: {}", e.file(), e.message()),
    }
}

fn run_cmd(
    policy_path: PathBuf,
    tool: Option<String>,
    profile: Option<Profile>,
    report: bool,
    cmd: Vec<OsString>,
) -> ExitCode {
    let policy = match load(&policy_path, tool.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("refused: cannot load the policy: {e}");
            return ExitCode::from(125);
        }
    };
    let capture = policy.limits.max_output_bytes.is_some();
    let mut options = RunOptions::default()
        .stdio(if capture {
            Stdio::Capture
        } else {
            Stdio::Inherit
        })
        .one_shot();
    options.profile = profile;
    // The CLI is its own hardened helper (zygote), whatever it is called.
    options.helper = std::env::current_exe().ok();
    if report {
        // The plan of this very command; when it would be refused, the policy's plan, which
        // shows what is not enforced (the run below then prints why).
        match sandbox::runner::plan_for(&policy, &cmd, &options) {
            Ok(plan) => eprintln!("{}", plan.report_json()),
            Err(_) => {
                let host = HostSupport::cached();
                let plan = Plan::new(&policy, profile.unwrap_or(Profile::Strict), host);
                eprintln!("{}", plan.report_json());
            }
        }
    }
    match run(&policy, &cmd, &options) {
        Ok(out) => {
            if capture {
                let _ = std::io::stdout().write_all(&out.stdout);
                let _ = std::io::stderr().write_all(&out.stderr);
                let cap = policy.limits.max_output_bytes.unwrap_or_default();
                if out.stdout_truncated {
                    eprintln!(
                        "policy-sandbox: stdout truncated at {cap} bytes (limits.max_output_bytes)"
                    );
                }
                if out.stderr_truncated {
                    eprintln!(
                        "policy-sandbox: stderr truncated at {cap} bytes (limits.max_output_bytes)"
                    );
                }
            }
            if out.timed_out {
                eprintln!(
                    "policy-sandbox: killed at the timeout of {} ms (limits.timeout_ms)",
                    policy.limits.timeout_ms.unwrap_or_default()
                );
            }
            ExitCode::from(out.status_code().clamp(0, 255) as u8)
        }
        Err(e @ sandbox::RunError::Exec { .. }) => {
            eprintln!("policy-sandbox: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
        // The command ran: not a refusal, though its status (and output) is gone.
        Err(e @ sandbox::RunError::StatusLost(_)) => {
            eprintln!("status lost: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
        Err(e) => {
            eprintln!("refused: {e}");
            ExitCode::from(125)
        }
    }
}

fn status_text(enforcement: &sandbox::Enforcement) -> String {
    match enforcement {
        sandbox::Enforcement::Exact => "exact".to_string(),
        sandbox::Enforcement::Widened { to } => format!("widened to {to}"),
        sandbox::Enforcement::NotEnforced { reason } => format!("NOT ENFORCED: {reason}"),
    }
}

fn check(
    json: bool,
    policy: Option<PathBuf>,
    tool: Option<String>,
    profile: Option<Profile>,
) -> ExitCode {
    let host = HostSupport::detect();
    let namespaces = HostSupport::probe_namespaces();
    let strict_ok =
        host.landlock_abi >= sandbox::plan::MIN_LANDLOCK_ABI && host.seccomp && namespaces.is_ok();
    let hardened_ok = host.landlock_abi >= sandbox::plan::FULL_LANDLOCK_ABI && host.seccomp;
    let mut plan_json = serde_json::Value::Null;
    let mut plan_text = String::new();
    let mut refused = false;
    if let Some(path) = &policy {
        let p = match load(path, tool.as_deref()) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let profile = profile.unwrap_or(Profile::Strict);
        let mut host_for_plan = host.clone();
        if let Err(e) = &namespaces {
            host_for_plan.user_ns = Err(e.clone());
        }
        let plan = Plan::new(&p, profile, &host_for_plan);
        let refusal = plan.refusal();
        refused = refusal.is_some();
        plan_json = serde_json::json!({
            "profile": profile,
            "refused": refusal,
            "report": plan.report_json(),
        });
        plan_text.push_str(&format!(
            "\npolicy {} under the {profile} profile:\n",
            path.display()
        ));
        for r in &plan.rules {
            let status = status_text(&r.enforcement);
            let by = if r.by.is_empty() {
                String::new()
            } else {
                format!(" [{}]", r.by.join(", "))
            };
            plan_text.push_str(&format!("  {}: {status}{by}\n", r.rule));
        }
        for p in &plan.protected {
            let status = status_text(&p.enforcement);
            plan_text.push_str(&format!(
                "  protected {} ({}): {status}\n",
                p.path.display(),
                p.kind
            ));
        }
        match refusal {
            Some(why) => plan_text.push_str(&format!("refused: {why}\n")),
            None => plan_text.push_str("runs\n"),
        }
    }
    if json {
        let out = serde_json::json!({
            "landlock_abi": host.landlock_abi,
            "seccomp": host.seccomp,
            "namespaces": {
                "user": namespaces.is_ok(),
                "mount": namespaces.is_ok(),
                "pid": namespaces.is_ok(),
                "net": namespaces.is_ok(),
                "error": namespaces.as_ref().err(),
            },
            "pids_cgroup": host.pids_cgroup,
            "euid": host.euid,
            "profiles": {
                "strict": strict_ok,
                "hardened": hardened_ok,
            },
            "default_profile": if strict_ok { Some("strict") } else { None },
            "plan": plan_json,
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        println!(
            "Landlock ABI: {} (strict needs >= {}, hardened and net = allow >= {})",
            host.landlock_abi,
            sandbox::plan::MIN_LANDLOCK_ABI,
            sandbox::plan::FULL_LANDLOCK_ABI
        );
        println!("seccomp: {}", if host.seccomp { "yes" } else { "no" });
        match &namespaces {
            Ok(()) => println!("user/mount/pid/net namespaces: yes"),
            Err(e) => println!("user/mount/pid/net namespaces: no ({e})"),
        }
        match &host.pids_cgroup {
            Some(c) => println!(
                "pids cgroup: {} ({})",
                c.parent.display(),
                if c.v2 { "v2" } else { "v1" }
            ),
            None => println!(
                "pids cgroup: none (max_processes {})",
                if host.host_root {
                    "is refused for the host's root"
                } else {
                    "uses RLIMIT_NPROC"
                }
            ),
        }
        println!(
            "strict profile: {}; hardened profile: {} (only by name)",
            if strict_ok {
                "available (default)"
            } else {
                "unavailable"
            },
            if hardened_ok {
                "available"
            } else {
                "unavailable"
            }
        );
        print!("{plan_text}");
    }
    if refused {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The in-process decision for one call: the policy registered as the only tool of a fresh
/// registry and invocation, asked through [`Invocation::decide`], so the gate, the constraints
/// (`forbidden`, `max_invocations`, `only_after`) and approval (none is configured here, so
/// `requires_approval` denies) are judged exactly as in an agent.
///
/// [`Invocation::decide`]: policy_runtime::registry::Invocation::decide
fn gate(policy_path: PathBuf, tool: String, args: String) -> ExitCode {
    use policy_runtime::registry::{Registry, ToolCall};
    use policy_runtime::tool::{fn_tool, ToolError, ToolSpec};
    let entry = match load_entry(&policy_path, Some(&tool)) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // The recorded roles make typed path arguments: a `write` argument is judged against
    // `fs.write` only, as the tool's own gate judges its `WritePath`.
    let typed = entry.path_args();
    let policy = entry.policy;
    let value: serde_json::Value = match serde_json::from_str(&args) {
        Ok(v) => v,
        Err(e) => {
            // serde_json's message already ends with the position.
            eprintln!("error: --args is not valid JSON: {e}");
            return ExitCode::from(2);
        }
    };
    let mut registry = Registry::new();
    if let Ok(cwd) = std::env::current_dir() {
        registry.set_cwd(cwd);
    }
    let mut spec = ToolSpec::new(tool.clone(), policy.clone());
    spec.path_args = typed.clone();
    let body = fn_tool(spec, |_, _| {
        Err(ToolError::new("the gate command never runs a tool"))
    });
    if let Err(e) = registry.register(body) {
        eprintln!("error: --tool: {e}");
        return ExitCode::from(2);
    }
    let call = ToolCall::new(tool.clone(), value.clone());
    match registry.start_invocation().decide(&call) {
        Ok(args) => {
            // Which paths were judged, for the reader; the decision above is the verdict.
            let mut judged = value;
            let checked = policy_runtime::gate::checked_paths(
                &policy,
                &typed,
                &mut judged,
                std::env::current_dir().ok().as_deref(),
            )
            .unwrap_or_default();
            let out = serde_json::json!({
                "tool": tool,
                "allowed": true,
                "checked": checked,
                "args": args,
            });
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(denial) => {
            let out = serde_json::json!({
                "tool": tool,
                "allowed": false,
                "denial": denial,
            });
            println!("{out}");
            ExitCode::from(1)
        }
    }
}
