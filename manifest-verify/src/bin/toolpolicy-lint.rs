//! `toolpolicy-lint [PATH] [--format human|json|sarif] [--manifest FILE] [--trust CRATE]...`
//!
//! Checks that every `#[tool(policy(...))]` of the crate or workspace at PATH uses no
//! capability its policy does not grant, following helpers across modules, `macro_rules!`
//! macros and the workspace's path dependencies.
//!
//! Exit status: 0 when every tool stays within its policy; 1 when at least one uses more (or
//! calls code that cannot be analysed); 2 when the code could not be read completely.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use manifest_verify::lint::{lint, render, Options};
use policy_runtime::Manifest;

/// Parsing whole crates is bound by allocation; mimalloc makes the lint markedly faster than
/// the system allocator does (see `scripts/lint-registry-bench.sh`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Output formats.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    /// Diagnostics with the offending source line and the call path.
    Human,
    /// `{"violations", "tools", "findings", "problems"}`.
    Json,
    /// SARIF 2.1.0, for code-scanning uploads.
    Sarif,
}

/// Check that tools use no more than their policies declare.
#[derive(Parser, Debug)]
#[command(name = "toolpolicy-lint", version)]
struct Args {
    /// A crate or workspace directory (with Cargo.toml), or a directory with src/lib.rs.
    #[arg(default_value = ".")]
    path: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// Take policies from this committed manifest instead of the attributes.
    #[arg(long)]
    manifest: Option<PathBuf>,
    /// Do not follow calls into this crate (trusted infrastructure); repeatable.
    #[arg(long = "trust", value_name = "CRATE")]
    trusted: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let manifest = match &args.manifest {
        None => None,
        Some(path) => match Manifest::from_path(path) {
            Ok(m) => Some(m),
            Err(e) => {
                eprintln!("{:?}", miette::Report::new(e));
                return ExitCode::from(2);
            }
        },
    };
    let trusted = args.trusted.iter().map(|c| c.replace('-', "_")).collect();
    let report = match lint(&args.path, &Options { manifest, trusted }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let text = match args.format {
        Format::Human => render::human(&report),
        Format::Json => render::json(&report),
        Format::Sarif => render::sarif(&report),
    };
    print!("{text}");
    ExitCode::from(report.exit_code())
}
