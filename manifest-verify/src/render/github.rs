//! `--format github`: one workflow command per finding, so findings show up as annotations on
//! the pull request's diff: `::error` for widenings, `::notice` for information and for notices
//! about the inputs; a run that could not compare prints one `::error` with the reason.

use std::fmt::Write;

use policy_runtime::LoadError;

use super::Inputs;
use crate::findings::{Report, Severity};

/// One `::error`/`::notice` line per finding.
pub fn render(report: &Report, inputs: Inputs<'_>) -> String {
    let mut out = String::new();
    for notice in inputs.notices() {
        let _ = writeln!(out, "::notice title=manifest-verify::{}", data(notice));
    }
    for f in &report.findings {
        let loc = inputs.locate(f);
        let command = match f.severity() {
            Severity::Error => "error",
            Severity::Info => "notice",
        };
        let message = f.text();
        let _ = writeln!(
            out,
            "::{command} file={},line={},col={},title={}::{}",
            property(&loc.file),
            loc.line,
            loc.column,
            property(&format!("{} {}", f.code, f.tool)),
            data(&message)
        );
    }
    out
}

/// One `::error` naming the input, with its line and column when known.
pub fn error(err: &LoadError) -> String {
    let mut props = String::new();
    if !err.file().is_empty() {
        let _ = write!(
            props,
            "file={},",
            property(&crate::source::location_file(err.file()))
        );
        if let (Some(line), Some(column)) = (err.line(), err.column()) {
            let _ = write!(props, "line={line},col={column},");
        }
    }
    format!(
        "::error {props}title=manifest-verify::{}\n",
        data(&super::error_text(err))
    )
}

/// Escaping of a workflow command's message.
fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escaping of a workflow command's property value.
fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes() {
        assert_eq!(super::data("50%\nx"), "50%25%0Ax");
        assert_eq!(super::property("a:b,c"), "a%3Ab%2Cc");
    }
}
