//! Reading and parsing one source file without trusting it.
//!
//! A `mod` declaration or `#[path]` can name anything: a FIFO (opening it blocks until a writer
//! comes), `/dev/zero` (never ends), a 50 MB generated file (gigabytes of syntax tree), or text
//! nested so deeply that the parser would overflow its stack. Each of these is a
//! [`LintError`] of its own, which the lint reports as unanalysable code, never a hang or a
//! crash.

use std::io::Read;
use std::path::Path;

use proc_macro2::TokenStream;

use super::nesting::{self, MAX_GROUP_DEPTH, MAX_NESTING};
use super::LintError;
use policy_analysis::lint::walk::Limits;

/// The largest source file the lint reads (4 MiB; the largest file among the 318 crates of
/// the local registry that `scripts/lint-registry-bench.sh` reads is 1.5 MB of tables).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The text of `path` when it is a regular file of at most [`MAX_FILE_BYTES`].
pub(crate) fn read(path: &Path) -> Result<String, LintError> {
    let io = |e| LintError::Io(path.to_path_buf(), e);
    // Checked before opening: opening a FIFO for reading blocks until a writer appears.
    let before = std::fs::metadata(path).map_err(io)?;
    regular(path, &before)?;
    let file = std::fs::File::open(path).map_err(io)?;
    // And again on the handle, in case the path was replaced in between.
    regular(path, &file.metadata().map_err(io)?)?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(io)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(LintError::TooLarge {
            path: path.to_path_buf(),
            limit: MAX_FILE_BYTES,
        });
    }
    Ok(text)
}

fn regular(path: &Path, meta: &std::fs::Metadata) -> Result<(), LintError> {
    if !meta.is_file() {
        return Err(LintError::NotAFile(path.to_path_buf()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(LintError::TooLarge {
            path: path.to_path_buf(),
            limit: MAX_FILE_BYTES,
        });
    }
    Ok(())
}

/// The items of `text` (the file at `path`), refusing input nested deeper than
/// [`MAX_NESTING`] before the recursive parser sees it.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Vec<syn::Item>, LintError> {
    let parse_error = |span: proc_macro2::Span, message: String| {
        let start = span.start();
        LintError::Parse {
            file: path.to_path_buf(),
            line: start.line,
            column: start.column + 1,
            message,
        }
    };
    let text = strip_bom_and_shebang(text);
    let tokens: TokenStream = text
        .parse()
        .map_err(|e: proc_macro2::LexError| parse_error(e.span(), e.to_string()))?;
    let (depth, at) = nesting::estimate(tokens.clone(), Limits::WORKSPACE.max_parsed_macro_depth);
    if !nesting::within_limits(depth) {
        return Err(LintError::TooDeep {
            file: path.to_path_buf(),
            line: at.start().line,
            limit: if depth.parsed > MAX_NESTING {
                MAX_NESTING
            } else {
                MAX_GROUP_DEPTH
            },
        });
    }
    syn::parse2::<syn::File>(tokens)
        .map(|f| f.items)
        .map_err(|e| parse_error(e.span(), e.to_string()))
}

/// As `syn::parse_file` does: a byte-order mark and a `#!` interpreter line (not `#![attr]`)
/// are not Rust. The line's newline stays, so line numbers do not move.
fn strip_bom_and_shebang(text: &str) -> &str {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match text.strip_prefix("#!") {
        Some(rest) if !rest.trim_start().starts_with('[') => {
            text.find('\n').map_or("", |i| &text[i..])
        }
        _ => text,
    }
}
