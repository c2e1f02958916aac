//! `--format human`: one miette diagnostic per finding, pointing at the manifest, with the old
//! and new values and the witness; then a one-line summary.

use std::fmt;

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

use super::Inputs;
use crate::findings::{Finding, Report, Severity};

/// All findings, then the summary line.
pub fn render(report: &Report, inputs: Inputs<'_>, color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
    let mut out = String::new();
    for f in &report.findings {
        let (input, span) = inputs.manifest_span(f);
        // miette finds a span's line by scanning from the start of its source, which is
        // quadratic over many findings in a large manifest: it is given only the lines around
        // the span, and told which line the window starts on.
        let at = span.as_ref().and_then(|s| input.spans().position(s.start));
        let window = span
            .as_ref()
            .zip(at)
            .and_then(|(s, (line, _))| Some((around(&input.text, s.clone())?, line)));
        let location = match (&window, at) {
            (None, Some((line, column))) => Some(format!("{}:{line}:{column}", input.name)),
            _ => None,
        };
        let diagnostic = FindingDiagnostic {
            finding: f,
            source: Named {
                name: &input.name,
                text: window
                    .as_ref()
                    .map_or("", |((w, _), _)| &input.text[w.clone()]),
                first_line: window.as_ref().map_or(0, |(_, line)| line - 1),
            },
            span: window
                .as_ref()
                .map(|((w, s), _)| (s.start - w.start, s.end - s.start).into()),
            location,
        };
        // Through `renderable`: a finding on a minified one-line manifest lies past the column
        // miette can pad to, and its snippet would be the whole manifest.
        let safe = policy_runtime::diagnostics::renderable(&diagnostic);
        if handler.render_report(&mut out, &safe).is_err() {
            out.push_str(&format!("{}: {}\n", f.code, f.message));
        }
    }
    out.push_str(&summary(report, inputs));
    out
}

fn summary(report: &Report, inputs: Inputs<'_>) -> String {
    let widenings = report.widenings().count();
    let notes = report.findings.len() - widenings;
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    if widenings == 0 {
        format!(
            "no widening from {} to {} ({})\n",
            inputs.old.name,
            inputs.new.name,
            plural(notes, "note")
        )
    } else {
        format!(
            "{} from {} to {} ({})\n",
            plural(widenings, "widening"),
            inputs.old.name,
            inputs.new.name,
            plural(notes, "note")
        )
    }
}

struct FindingDiagnostic<'a> {
    finding: &'a Finding,
    source: Named<'a>,
    span: Option<SourceSpan>,
    /// Where the finding points when no snippet is shown.
    location: Option<String>,
}

impl fmt::Debug for FindingDiagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.finding, f)
    }
}

impl fmt::Display for FindingDiagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.finding.message)?;
        match &self.location {
            Some(at) => write!(f, "\n  at {at}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for FindingDiagnostic<'_> {}

impl Diagnostic for FindingDiagnostic<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(self.finding.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.finding.severity() {
            Severity::Error => miette::Severity::Error,
            Severity::Info => miette::Severity::Advice,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        let f = self.finding;
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".to_string());
        let mut help = format!("old: {}\nnew: {}", show(&f.old), show(&f.new));
        if let Some(w) = &f.witness {
            help.push_str(&format!("\nwitness: {w}"));
        }
        Some(Box::new(help))
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.span.map(|_| &self.source as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.span?;
        let label = match &self.finding.witness {
            Some(w) => format!("{}: {w}", self.finding.part_or_tool()),
            None => self.finding.part_or_tool().to_string(),
        };
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some(label),
            span,
        ))))
    }
}

/// The window of `text` miette is shown for `span`: the span's own line(s), with the span.
/// `None` when that is longer than a snippet may be (a minified one-line manifest): the
/// finding is then printed without a snippet.
fn around(
    text: &str,
    span: std::ops::Range<usize>,
) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    const MAX_WINDOW: usize = 4 * policy_runtime::diagnostics::MAX_SNIPPET_LINE;
    let start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let rest = &text[span.end..];
    let end = span.end + rest.find('\n').unwrap_or(rest.len());
    (end - start <= MAX_WINDOW).then_some((start..end, span))
}

/// The lines of manifest text around one finding, with its name and the line number of its
/// first line, borrowed (miette's `NamedSource` would copy the text for every finding).
struct Named<'a> {
    name: &'a str,
    text: &'a str,
    first_line: usize,
}

impl SourceCode for Named<'_> {
    fn read_span<'b>(
        &'b self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'b> + 'b>, MietteError> {
        let inner = self.text.read_span(span, before, after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.to_string(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            inner.column(),
            inner.line_count(),
        )))
    }
}
