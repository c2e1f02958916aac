//! The main demo: a prompt-injected agent's tool calls, replayed against annotated tools.
//!
//! ```text
//! cargo run -p toolpolicy-examples --bin agent-demo [-- --transcript FILE] [--out DIR]
//! ```
//!
//! It lays out a small world under /tmp/toolpolicy-demo, writes the manifests and opens the
//! audit log, forks its tool runner (which also serves a local stand-in for the status API),
//! confines itself under the union of its tools' policies and prints that report
//! (`--no-confine` skips this), replays the transcript (a plain JSON file), prints each call's
//! verdict and what the sandbox enforced, and runs the verifier against a "version 2" of the
//! tools. Exit status: 0 when every step met its expectation, 1 when one did not or the agent
//! could not confine itself, 2 on bad input.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use manifest_verify::render::{self, Format, Inputs};
use manifest_verify::Input;
use policy_runtime::audit::JsonlSink;
use policy_runtime::macro_support::registry_of;
use policy_runtime::protected::ProtectedKind;
use sandbox::egress::{BrokerOptions, Resolver};
use sandbox::Profile;
use toolpolicy_examples::demo::{replay, summary, Transcript};
use toolpolicy_examples::sandboxed::{self, Settings};
use toolpolicy_examples::trace::Style;
use toolpolicy_examples::{confinement, tools, world};

const USAGE: &str = "usage: agent-demo [--transcript FILE] [--out DIR] [--no-confine]";

fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == sandbox::trampoline::SUBCOMMAND)
    {
        sandbox::trampoline::main();
    }
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("agent-demo: {message}");
            ExitCode::from(2)
        }
    }
}

struct Args {
    transcript: PathBuf,
    out: PathBuf,
    confine: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        transcript: Path::new(env!("CARGO_MANIFEST_DIR")).join("transcripts/injected.json"),
        out: PathBuf::from(world::ROOT).join("artifacts"),
        confine: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--transcript" => args.transcript = it.next().ok_or(USAGE)?.into(),
            "--out" => args.out = it.next().ok_or(USAGE)?.into(),
            "--no-confine" => args.confine = false,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    Ok(args)
}

/// A stand-in for `api.example.com:8080`, on a loopback port of this machine: bound now,
/// served by [`serve_status_api`] (in the tool runner, outside the agent's confinement).
fn bind_status_api() -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}

fn serve_status_api(listener: TcpListener) {
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let body = r#"{"status":"ok","service":"status-api","version":"1.4.2"}"#;
            let _ = write!(
                &stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
}

fn run() -> Result<ExitCode, String> {
    let args = parse_args()?;
    let style = Style::detect();
    let transcript = Transcript::load(&args.transcript)?;

    let root = world::create(Path::new(world::ROOT))
        .map_err(|e| format!("creating {}: {e}", world::ROOT))?;
    let (api_listener, api) =
        bind_status_api().map_err(|e| format!("starting the local status API: {e}"))?;
    sandboxed::configure(Settings {
        helper: std::env::current_exe().ok(),
        broker: Some(BrokerOptions {
            resolver: Resolver::map([("api.example.com", api)]),
            // The stand-in listens on this machine's loopback, which the broker refuses for
            // names by default (a DNS-rebinding guard).
            allow_host_local: true,
            ..BrokerOptions::default()
        }),
    });

    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("creating {}: {e}", args.out.display()))?;
    let audit_path = args.out.join("audit.jsonl");
    let manifest_path = args.out.join("tools.manifest.json");
    let v2_path = args.out.join("tools.v2.manifest.json");

    // The agent's own files, written and opened before it confines itself.
    let tools = tools::all();
    let mut registry = registry_of(tools.clone()).map_err(|e| e.to_string())?;
    let sink = Arc::new(
        JsonlSink::open(&audit_path).map_err(|e| format!("{}: {e}", audit_path.display()))?,
    );
    registry.add_sink(sink.clone());
    let manifest = registry.manifest();
    manifest
        .write_to(&manifest_path)
        .map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    let v2 = registry_of(tools::v2::all())
        .map_err(|e| e.to_string())?
        .manifest();
    v2.write_to(&v2_path)
        .map_err(|e| format!("{}: {e}", v2_path.display()))?;

    println!(
        "{}",
        style.bold("toolpolicy demo: a prompt-injected agent against declared tool policies")
    );
    println!(
        "{}",
        style.dim(&format!(
            "world: {}   status API stand-in: {api}",
            root.display()
        ))
    );
    println!(
        "{}",
        style.dim(&format!("transcript: {}", args.transcript.display()))
    );
    if !transcript.description.is_empty() {
        println!("{}", style.dim(&transcript.description));
    }
    println!(
        "{}",
        style.dim(&format!("manifest hash: {}", registry.manifest_hash()))
    );

    if args.confine {
        let protected = confinement::protected_list(
            &root,
            &[
                (audit_path.as_path(), ProtectedKind::AuditLog),
                (manifest_path.as_path(), ProtectedKind::Manifest),
                (v2_path.as_path(), ProtectedKind::Manifest),
            ],
        )?;
        policy_runtime::protected::set_process_list(protected.clone());
        // The subprocess tools' strict sandboxes need namespaces and mounts, which a confined
        // process cannot make: a runner forked now (one thread, unconfined) starts them.
        let specs = tools.iter().map(|t| t.spec().clone()).collect();
        toolpolicy_examples::runner::start(specs, move || serve_status_api(api_listener))
            .map_err(|e| format!("starting the tool runner: {e}"))?;
        let policy = confinement::agent_policy(&tools);
        println!();
        println!(
            "{}",
            style.bold("The agent confines itself: the union of its tools' policies (sandbox::confine_self, hardened: Landlock, seccomp, no-new-privs, no capabilities)")
        );
        match sandbox::confine_self_with(&policy, Profile::Hardened, &protected) {
            Ok(confined) => {
                for line in confinement::report_lines(&confined.plan, style) {
                    println!("  {line}");
                }
                println!(
                    "{}",
                    style.dim("  subprocess tools start from the tool runner forked before confining, each in its own strict sandbox")
                );
            }
            Err(e) => {
                println!("  {} {e}", style.bad("REFUSED"));
                return Ok(ExitCode::from(1));
            }
        }
    } else {
        serve_status_api(api_listener);
    }

    let mut invocation = registry.start_invocation();
    let outcomes = replay(&transcript, &mut invocation, style);
    let unexpected = summary(&outcomes, style);
    if let Some(e) = sink.take_error() {
        return Err(format!(
            "writing the audit log {}: {e}",
            audit_path.display()
        ));
    }

    println!();
    println!("{}", style.bold("Artifacts"));
    println!("  audit log   {}", audit_path.display());
    println!("  manifest    {}", manifest_path.display());
    println!("  version 2   {}", v2_path.display());

    println!();
    println!(
        "{}",
        style.bold(
            "Pull-request review: manifest-verify tools.manifest.json tools.v2.manifest.json"
        )
    );
    let old = Input::from_text(
        "tools.manifest.json",
        "tools.manifest.json",
        manifest.to_json(),
    )
    .map_err(|e| e.to_string())?;
    let new = Input::from_text(
        "tools.v2.manifest.json",
        "tools.v2.manifest.json",
        v2.to_json(),
    )
    .map_err(|e| e.to_string())?;
    let report = manifest_verify::diff_manifests(&old.manifest, &new.manifest);
    let inputs = Inputs {
        old: &old,
        new: &new,
    };
    print!(
        "{}",
        render::render(&report, inputs, Format::Human, style_is_color(style))
    );
    println!(
        "  verdict: {}",
        if report.widened() {
            style.bad("widened (exit 1: the PR needs a security review)")
        } else {
            style.ok("no widening")
        }
    );

    Ok(if unexpected == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn style_is_color(style: Style) -> bool {
    style.bold("x") != "x"
}
