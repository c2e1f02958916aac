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
        let diagnostic = FindingDiagnostic {
            finding: f,
            source: Named {
                name: &input.name,
                text: &input.text,
            },
            span: span.map(|s| (s.start, s.end - s.start).into()),
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
}

impl fmt::Debug for FindingDiagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.finding, f)
    }
}

impl fmt::Display for FindingDiagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.finding.message)
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

/// Manifest text with its name, borrowed (miette's `NamedSource` would copy the text for every
/// finding).
struct Named<'a> {
    name: &'a str,
    text: &'a str,
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
            inner.line(),
            inner.column(),
            inner.line_count(),
        )))
    }
}
