//! Rendering a miette diagnostic without ever panicking on its source.
//!
//! miette pads its snippets with format widths, and Rust refuses widths past 65,535: a label
//! past that column (a manifest of thousands of tools written on one line) made every renderer
//! panic with "Formatting argument out of range". A snippet that long is unreadable anyway,
//! so [`renderable`] keeps the snippet only when every line it would print is at most
//! [`MAX_SNIPPET_LINE`] characters; otherwise the diagnostic is shown without a snippet and
//! names the line and column of each label instead. Every consumer that renders a
//! diagnostic with source code (the verifier's human output and load errors, the lint) passes
//! it through this one function before handing it to its miette handler.
//!
//! ```
//! use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, NamedSource};
//!
//! let text = format!("[{}]", "1,".repeat(50_000));
//! let diagnostic = miette::Report::new(
//!     MietteDiagnostic::new("bad value").with_label(LabeledSpan::at(99_990..99_991, "here")),
//! )
//! .with_source_code(NamedSource::new("one-line.json", text));
//! let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor());
//! let mut out = String::new();
//! let safe = policy_runtime::diagnostics::renderable(diagnostic.as_ref());
//! handler.render_report(&mut out, &safe).unwrap();
//! assert!(out.contains("bad value"));
//! assert!(out.contains("one-line.json:1:99991"), "{out}");
//! ```

use std::fmt;

use miette::{Diagnostic, LabeledSpan, SourceCode};

/// The longest source line shown in a snippet, in characters.
pub const MAX_SNIPPET_LINE: usize = 1_000;

/// `diagnostic` as it is safe to render: itself when its snippet is short enough, otherwise
/// the same message, code, severity and help without a snippet, with each label's
/// `file:line:column` appended to the message.
pub fn renderable(diagnostic: &dyn Diagnostic) -> Renderable<'_> {
    Renderable {
        locations: snippet_locations(diagnostic),
        inner: diagnostic,
    }
}

/// `None` when the snippet is short enough to show; otherwise where each label points
/// (`file:line:column`), for the snippet-free form.
fn snippet_locations(diagnostic: &dyn Diagnostic) -> Option<Vec<String>> {
    let source = diagnostic.source_code()?;
    let labels: Vec<LabeledSpan> = diagnostic.labels()?.collect();
    let mut too_long = false;
    let mut locations = Vec::new();
    for label in &labels {
        // One line of context either side, as miette prints by default.
        match source.read_span(label.inner(), 1, 1) {
            Ok(contents) => {
                let text = String::from_utf8_lossy(contents.data());
                too_long |= text.lines().any(|l| l.chars().count() > MAX_SNIPPET_LINE);
                let at = source.read_span(label.inner(), 0, 0).ok();
                let (line, column) = at.as_ref().map_or((0, 0), |c| (c.line(), c.column()));
                let name = at
                    .as_ref()
                    .and_then(|c| c.name().map(str::to_string))
                    .unwrap_or_default();
                let place = format!("{name}:{}:{}", line + 1, column + 1);
                locations.push(match label.label() {
                    Some(l) => format!("{place} ({l})"),
                    None => place,
                });
            }
            Err(_) => too_long = true,
        }
    }
    too_long.then_some(locations)
}

/// A diagnostic made safe to render (see [`renderable`]).
pub struct Renderable<'a> {
    inner: &'a dyn Diagnostic,
    /// `Some` when the snippet is dropped: where the labels point.
    locations: Option<Vec<String>>,
}

impl fmt::Debug for Renderable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.inner, f)
    }
}

impl fmt::Display for Renderable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner)?;
        match &self.locations {
            Some(at) if !at.is_empty() => write!(f, "\n  at {}", at.join(", ")),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for Renderable<'_> {}

impl Diagnostic for Renderable<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.inner.code()
    }

    fn severity(&self) -> Option<miette::Severity> {
        self.inner.severity()
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.inner.help()
    }

    fn url<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.inner.url()
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        match self.locations {
            None => self.inner.source_code(),
            Some(_) => None,
        }
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        match self.locations {
            None => self.inner.labels(),
            Some(_) => None,
        }
    }

    fn related<'b>(&'b self) -> Option<Box<dyn Iterator<Item = &'b dyn Diagnostic> + 'b>> {
        self.inner.related()
    }

    fn diagnostic_source(&self) -> Option<&dyn Diagnostic> {
        self.inner.diagnostic_source()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use miette::{GraphicalReportHandler, GraphicalTheme, MietteDiagnostic, NamedSource};

    fn diagnostic(text: String, at: std::ops::Range<usize>) -> miette::Report {
        miette::Report::new(MietteDiagnostic::new("msg").with_label(LabeledSpan::at(at, "here")))
            .with_source_code(NamedSource::new("f.json", text))
    }

    /// Issue 18 item 2: a label past column 65,535 made miette panic.
    #[test]
    fn labels_past_any_column_render_without_panicking() {
        let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor());
        let line = "x".repeat(200_000);
        for at in [10, 70_000, 199_999] {
            let d = diagnostic(format!("{{\n{line}\n}}"), 2 + at..2 + at + 1);
            let mut out = String::new();
            handler
                .render_report(&mut out, &renderable(d.as_ref()))
                .unwrap();
            assert!(out.contains("msg"), "{out}");
            assert!(out.contains(&format!("f.json:2:{}", at + 1)), "{out}");
            assert!(out.len() < 1_000, "no 200 kB snippet: {} bytes", out.len());
        }
        // Short lines keep their snippet.
        let d = diagnostic("{\n  \"a\": 1\n}".to_string(), 4..7);
        let mut out = String::new();
        handler
            .render_report(&mut out, &renderable(d.as_ref()))
            .unwrap();
        assert!(out.contains("\"a\": 1") && out.contains("here"), "{out}");
    }

    #[test]
    fn miette_itself_panics_past_column_65535() {
        let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor());
        let d = diagnostic("x".repeat(70_000), 69_000..69_001);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut out = String::new();
            let _ = handler.render_report(&mut out, d.as_ref());
        }));
        assert!(result.is_err(), "the fallback guards a real panic");
    }
}
