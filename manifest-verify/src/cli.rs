//! The `manifest-verify` command line; its contract is in `policy-runtime/docs/cli.md`.
//!
//! `manifest-verify OLD NEW [--format human|json|sarif|github]` exits 0 when nothing widened,
//! 1 when something did, and 2 when an input cannot be read or is invalid (the message names
//! the file, line and column; with `json`, `sarif` or `github` an error document is printed on
//! stdout too). Either argument may be `REV:PATH`, read from git; an `OLD` that is absent at an
//! existing revision is an empty manifest, with a notice.

use std::io::{IsTerminal, Write};

use clap::Parser;
use miette::{GraphicalReportHandler, GraphicalTheme};

use crate::render::{self, Format, Inputs};
use crate::source;
use crate::Verifier;

/// Exit status: no widening.
pub const EXIT_OK: i32 = 0;
/// Exit status: at least one widening.
pub const EXIT_WIDENED: i32 = 1;
/// Exit status: an input could not be read or is invalid (also clap's status for bad usage).
pub const EXIT_INVALID: i32 = 2;

/// What `--help` prints after the options.
const AFTER_HELP: &str = "\
Exit status:
  0  no widening (narrowings and removed tools are information)
  1  at least one widening
  2  an input could not be read or is invalid, or bad usage; with --format json, sarif or
     github an error document is printed on stdout too

OLD and NEW are files, or REV:PATH read with `git show` (e.g. origin/main:tools.manifest.json).
An OLD whose PATH does not exist at an existing REV is a new manifest: it is compared with an
empty one, so every tool is reported as tool.added, with a notice.";

/// Exact widening detection between two toolpolicy manifests.
#[derive(Debug, Parser)]
#[command(name = "manifest-verify", version, about, long_about = None, after_help = AFTER_HELP)]
pub struct Args {
    /// The old manifest: a file, or REV:PATH read from git (e.g. origin/main:tools.manifest.json);
    /// absent at REV, it is an empty manifest.
    pub old: String,
    /// The new manifest: a file, or REV:PATH read from git.
    pub new: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

/// Runs the command with `args`, printing to stdout and stderr; returns the exit status.
pub fn run(args: &Args) -> i32 {
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let old = match source::load_base(&args.old) {
        Ok(i) => i,
        Err(e) => return invalid(&e, color, args.format),
    };
    let new = match source::load(&args.new) {
        Ok(i) => i,
        Err(e) => return invalid(&e, color, args.format),
    };
    let report = Verifier::new().diff(&old.manifest, &new.manifest);
    let inputs = Inputs {
        old: &old,
        new: &new,
    };
    if matches!(args.format, Format::Human | Format::Json) {
        // The other formats carry notices in their own document.
        for notice in inputs.notices() {
            eprintln!("note: {notice}");
        }
    }
    let color = args.format == Format::Human
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none();
    let text = render::render(&report, inputs, args.format, color);
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return EXIT_INVALID;
    }
    report.exit_code()
}

/// Parses the process arguments and runs; the `main` of the binary.
pub fn main() -> i32 {
    match Args::try_parse() {
        Ok(args) => run(&args),
        Err(e) => {
            let _ = e.print();
            if !e.use_stderr() {
                return EXIT_OK;
            }
            // Bad usage in CI (a typo in the workflow) still gets a document a SARIF upload or
            // a JSON reader can show, when the format itself was readable.
            let args: Vec<String> = std::env::args().skip(1).collect();
            if let Some(format) = requested_format(&args) {
                // clap's message without the usage and tips, on one line.
                let message = e.to_string();
                let lines: Vec<&str> = message
                    .lines()
                    .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more"))
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                let text = lines.join(" ");
                let usage = policy_runtime::LoadError::plain(
                    "",
                    text.trim_start_matches("error: ").to_string(),
                );
                if let Some(doc) = render::error(&usage, format) {
                    print!("{doc}");
                }
            }
            EXIT_INVALID
        }
    }
}

/// The `--format` of raw arguments that clap rejected, when it names a format.
fn requested_format(args: &[String]) -> Option<Format> {
    args.iter().enumerate().find_map(|(i, a)| {
        let value = match a.strip_prefix("--format") {
            Some("") => args.get(i + 1)?.as_str(),
            Some(rest) => rest.strip_prefix('=')?,
            None => return None,
        };
        value.parse().ok()
    })
}

/// Prints the diagnostic on stderr and, for the machine-read formats, an error document on
/// stdout; returns [`EXIT_INVALID`].
fn invalid(err: &policy_runtime::LoadError, color: bool, format: Format) -> i32 {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let mut text = String::new();
    if GraphicalReportHandler::new_themed(theme)
        .render_report(&mut text, &policy_runtime::diagnostics::renderable(err))
        .is_err()
    {
        text = format!("error: {err}\n");
    }
    eprint!("{text}");
    if let Some(doc) = render::error(err, format) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout
            .write_all(doc.as_bytes())
            .and_then(|()| stdout.flush());
    }
    EXIT_INVALID
}
