//! The agent's tools as an MCP server over stdio.
//!
//! ```text
//! mcp-server [--init-world] [--audit FILE] [--otlp URL] [--status-api ADDR]
//! ```
//!
//! `--init-world` lays out the demo world under /tmp/toolpolicy-demo first (as the agent demo
//! does); `--audit FILE` appends the audit events of every call to FILE (JSONL); `--otlp URL`
//! sends every call as an OpenTelemetry `execute_tool` span to an OTLP/HTTP endpoint (e.g.
//! `http://localhost:4318/v1/traces`);
//! `--status-api ADDR` makes `api.example.com` resolve to ADDR (e.g. `127.0.0.1:8080`) for the
//! sandboxed `fetch_url`. Stdout carries the protocol; diagnostics go to stderr. Exit status: 0
//! when the client closes the session, 1 when serving fails, 2 on bad arguments.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rmcp::ServiceExt;
use sandbox::egress::{BrokerOptions, Resolver};
use toolpolicy_examples::mcp::{PolicyServer, ServerOptions};
use toolpolicy_examples::sandboxed::{self, Settings};
use toolpolicy_examples::world;

const USAGE: &str =
    "usage: mcp-server [--init-world] [--audit FILE] [--otlp URL] [--status-api ADDR]";

fn main() -> ExitCode {
    // For the hardened profile the sandbox starts this same binary as its zygote; that
    // must happen before any runtime thread exists.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == sandbox::trampoline::SUBCOMMAND)
    {
        sandbox::trampoline::main();
    }
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("mcp-server: {message}");
            return ExitCode::from(2);
        }
    };
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp-server: {message}");
            ExitCode::from(1)
        }
    }
}

struct Args {
    init_world: bool,
    audit: Option<PathBuf>,
    otlp: Option<String>,
    status_api: Option<SocketAddr>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        init_world: false,
        audit: None,
        otlp: None,
        status_api: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--init-world" => args.init_world = true,
            "--audit" => args.audit = Some(it.next().ok_or(USAGE)?.into()),
            "--otlp" => args.otlp = Some(it.next().ok_or(USAGE)?),
            "--status-api" => {
                let addr = it.next().ok_or(USAGE)?;
                args.status_api = Some(addr.parse().map_err(|e| {
                    format!("--status-api `{addr}`: {e}; give an address such as 127.0.0.1:8080")
                })?);
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    Ok(args)
}

fn serve(args: Args) -> Result<(), String> {
    if args.init_world {
        world::create(Path::new(world::ROOT))
            .map_err(|e| format!("creating {}: {e}", world::ROOT))?;
    }
    sandboxed::configure(Settings {
        helper: std::env::current_exe().ok(),
        broker: args.status_api.map(|addr| BrokerOptions {
            resolver: Resolver::map([("api.example.com", addr)]),
            // A stand-in on this machine's loopback, which the broker refuses for names by
            // default (a DNS-rebinding guard).
            allow_host_local: addr.ip().is_loopback(),
            ..BrokerOptions::default()
        }),
    });
    let server = PolicyServer::new(ServerOptions {
        audit: args.audit,
        otlp: args.otlp,
    })?;
    eprintln!(
        "mcp-server: serving 7 tools on stdio, manifest hash {}",
        server.manifest_hash()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the async runtime: {e}"))?;
    let audit = server.clone();
    runtime.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("starting the MCP session: {e}"))?;
        running
            .waiting()
            .await
            .map_err(|e| format!("serving: {e}"))?;
        Ok::<(), String>(())
    })?;
    audit.finish_audit()
}
