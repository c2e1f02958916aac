//! `--format github`: one workflow command per finding, so findings show up as annotations on
//! the pull request's diff: `::error` for widenings, `::notice` for information.

use std::fmt::Write;

use super::Inputs;
use crate::findings::{Report, Severity};

/// One `::error`/`::notice` line per finding.
pub fn render(report: &Report, inputs: Inputs<'_>) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let loc = inputs.locate(f);
        let command = match f.severity() {
            Severity::Error => "error",
            Severity::Info => "notice",
        };
        let mut message = f.message.clone();
        if let Some(w) = &f.witness {
            let _ = write!(message, " (witness: {w})");
        }
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
