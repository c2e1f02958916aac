//! Printing a lint [`Report`]: human (miette, with the offending line), JSON, and SARIF 2.1.0
//! through the one SARIF renderer of the crate ([`crate::render::sarif`]).

use std::collections::HashMap;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};
use serde_json::{json, Value};

use super::{Finding, LintError, Report, Rule};
use crate::render::sarif::{fingerprint, physical_location, RuleDoc, Run};

/// The longest source line shown under a finding, in bytes: the workspace's one snippet rule,
/// [`policy_runtime::diagnostics::MAX_SNIPPET_LINE`] (counted in bytes here, which is never
/// more lenient than characters). Past it the finding is printed without its source: a label
/// past column 65,535 makes miette panic, and a very long line (a minified or generated file)
/// would be printed again for every finding on it. The lint builds its snippets from the lines
/// around each finding itself (for speed on large files), so it applies the rule here rather
/// than through [`policy_runtime::diagnostics::renderable`].
pub const MAX_SHOWN_LINE_BYTES: usize = policy_runtime::diagnostics::MAX_SNIPPET_LINE;

/// Whether a line of `line_bytes` bytes can be printed with a label under it.
fn fits_under_a_label(line_bytes: usize) -> bool {
    line_bytes <= MAX_SHOWN_LINE_BYTES
}

/// One file's text with the start of each line, so that a finding's line is found without
/// scanning the file again.
struct Indexed<'r> {
    text: &'r str,
    starts: Vec<usize>,
}

impl<'r> Indexed<'r> {
    fn new(text: &'r str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Indexed { text, starts }
    }

    /// The byte range of 1-based `line`, without its line break.
    fn line(&self, line: usize) -> Option<std::ops::Range<usize>> {
        let start = *self.starts.get(line.checked_sub(1)?)?;
        let end = self
            .starts
            .get(line)
            .map_or(self.text.len(), |next| next - 1);
        let end = if self.text[start..end].ends_with('\r') {
            end - 1
        } else {
            end
        };
        Some(start..end)
    }
}

/// The lines around a finding, standing in for the whole file: miette reads a span by scanning
/// its source from the start, which costs the file's length for every finding.
#[derive(Debug)]
struct Excerpt {
    name: String,
    text: String,
    /// 0-based number of the excerpt's first line in the file.
    first_line: usize,
    /// Byte offset of the excerpt in the file.
    offset: usize,
}

impl SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let local = SourceSpan::new(
            span.offset()
                .checked_sub(self.offset)
                .ok_or(MietteError::OutOfBounds)?
                .into(),
            span.len(),
        );
        let inner = self
            .text
            .read_span(&local, context_lines_before, context_lines_after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            SourceSpan::new(
                (inner.span().offset() + self.offset).into(),
                inner.span().len(),
            ),
            inner.line() + self.first_line,
            inner.column(),
            inner.line_count(),
        )))
    }
}

/// The finding's line with one line of context either side (what miette shows), each context
/// line only when short enough to print; `None` when the finding's own line is too long.
fn excerpt(file: &str, index: &Indexed<'_>, line: usize) -> Option<Excerpt> {
    let own = index.line(line)?;
    if !fits_under_a_label(own.len()) {
        return None;
    }
    let before = line
        .checked_sub(1)
        .and_then(|l| index.line(l))
        .filter(|r| fits_under_a_label(r.len()));
    let after = index.line(line + 1).filter(|r| fits_under_a_label(r.len()));
    let start = before.as_ref().map_or(own.start, |r| r.start);
    let end = after.as_ref().map_or(own.end, |r| r.end);
    Some(Excerpt {
        name: file.to_string(),
        text: index.text[start..end].to_string(),
        first_line: line - 1 - usize::from(before.is_some()),
        offset: start,
    })
}

/// The human form: one diagnostic per finding with its source line and call path, then a
/// summary line.
pub fn human(report: &Report) -> String {
    let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor());
    let indexed: HashMap<&str, Indexed<'_>> = report
        .sources
        .iter()
        .map(|(name, text)| (name.as_str(), Indexed::new(text)))
        .collect();
    let mut out = String::new();
    for f in &report.findings {
        let mut diagnostic = MietteDiagnostic::new(f.message.clone()).with_code(f.code.id());
        let mut help = Vec::new();
        let shown = indexed
            .get(f.at.file.as_str())
            .and_then(|index| Some((index, excerpt(&f.at.file, index, f.at.line)?)));
        if let Some((index, _)) = &shown {
            let line = index.line(f.at.line).unwrap_or(0..0);
            let text = &index.text[line.clone()];
            let column = text
                .char_indices()
                .nth(f.at.column.saturating_sub(1))
                .map_or(text.len(), |(i, _)| i);
            let start = line.start + column;
            let len = f.at.len.min(line.end - start);
            diagnostic = diagnostic.with_label(LabeledSpan::at(start..start + len, f.code.id()));
        } else {
            help.push(format!("at {}:{}:{}", f.at.file, f.at.line, f.at.column));
        }
        if f.call_path.len() > 1 {
            let steps: Vec<String> = f
                .call_path
                .iter()
                .map(|s| format!("{} ({}:{})", s.function, s.file, s.line))
                .collect();
            help.push(format!("call path: {}", steps.join(" → ")));
        }
        if !help.is_empty() {
            diagnostic = diagnostic.with_help(help.join("\n"));
        }
        let rendered = match shown {
            Some((_, source)) => miette::Report::new(diagnostic).with_source_code(source),
            None => miette::Report::new(diagnostic),
        };
        let _ = handler.render_report(&mut out, rendered.as_ref());
        out.push('\n');
    }
    for p in &report.problems {
        out.push_str(&format!("error: incomplete analysis: {p}\n"));
    }
    out.push_str(&format!(
        "{} violation(s) in {} tool(s) checked\n",
        report.findings.len(),
        report.tools
    ));
    out
}

/// `{"violations": bool, "tools": n, "findings": [...], "problems": [...]}`.
pub fn json(report: &Report) -> String {
    let value = json!({
        "violations": report.violated(),
        "tools": report.tools,
        "findings": report.findings,
        "problems": report.problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&value).expect("a report serializes") + "\n"
}

/// SARIF 2.1.0: every [`Rule`] of the lint, one result per finding with the call path as a
/// code flow. Code that could not be read is a result too (rule `lint.incomplete`, the verdict
/// does not cover it), and a tool execution notification of an unsuccessful invocation.
///
/// A finding's fingerprint is made of its rule, tool, file, call and source line with its
/// whitespace collapsed (and which occurrence of that line it is), so that code scanning keeps
/// tracking it when lines above it move.
pub fn sarif(report: &Report) -> String {
    let run = Run {
        tool: "toolpolicy-lint",
        rules: Rule::ALL.iter().map(|r| rule(*r)).collect(),
        success: report.problems.is_empty(),
        exit_code: i32::from(report.exit_code()),
        notifications: report
            .problems
            .iter()
            .map(|p| {
                let mut n = json!({
                    "level": "error",
                    "message": { "text": p.to_string() },
                });
                if let Some(location) = problem_location(p) {
                    n["locations"] = json!([location]);
                }
                n
            })
            .collect(),
    };
    let indexed: HashMap<&str, Indexed<'_>> = report
        .sources
        .iter()
        .map(|(name, text)| (name.as_str(), Indexed::new(text)))
        .collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            let snippet = indexed
                .get(f.at.file.as_str())
                .and_then(|index| Some(&index.text[index.line(f.at.line)?]))
                .map(normalized)
                .unwrap_or_default();
            let key = fingerprint(&[f.code.id(), &f.tool, &f.at.file, &f.call, &snippet]);
            let occurrence = seen.entry(key.clone()).or_default();
            *occurrence += 1;
            let print = fingerprint(&[&key, &occurrence.to_string()]);
            result(&run, f, print)
        })
        .collect();
    results.extend(report.problems.iter().map(|p| problem_result(&run, p)));
    run.render(results.into_iter())
}

/// A source line with its whitespace collapsed: what a fingerprint keeps of the location.
fn normalized(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn rule(rule: Rule) -> RuleDoc {
    RuleDoc::new(
        rule.id(),
        rule.summary(),
        rule.description(),
        rule.help_markdown(),
        rule.anchor(),
        "error",
    )
}

fn problem_result(run: &Run, p: &LintError) -> Value {
    // Code scanning wants a location for every result: the problem's file, else the crate's
    // manifest.
    let location = problem_location(p).unwrap_or_else(
        || json!({ "physicalLocation": physical_location("Cargo.toml", Some(1), None) }),
    );
    let file = p
        .location()
        .map(|(path, _)| path.display().to_string())
        .unwrap_or_default();
    // The message without its digits: a line number must not make a new alert.
    let text = p.to_string();
    let message: String = text.chars().filter(|c| !c.is_ascii_digit()).collect();
    json!({
        "ruleId": Rule::Incomplete.id(),
        "ruleIndex": run.rule_index(Rule::Incomplete.id()),
        "level": "error",
        "message": { "text": text },
        "locations": [location],
        "partialFingerprints": {
            "toolpolicyFinding/v1": fingerprint(&[Rule::Incomplete.id(), &file, &message]),
        },
    })
}

fn problem_location(p: &LintError) -> Option<Value> {
    let (path, line) = p.location()?;
    let line = line.filter(|l| *l > 0).unwrap_or(1);
    let file = path.display().to_string();
    Some(json!({ "physicalLocation": physical_location(&file, Some(line), None) }))
}

fn result(run: &Run, f: &Finding, print: String) -> Value {
    let mut r = json!({
        "ruleId": f.code.id(),
        "ruleIndex": run.rule_index(f.code.id()),
        "level": "error",
        "message": { "text": f.message },
        "locations": [{
            "physicalLocation": physical_location(&f.at.file, Some(f.at.line), Some(f.at.column)),
            "logicalLocations": [{ "fullyQualifiedName": f.tool, "kind": "function" }],
        }],
        "partialFingerprints": { "toolpolicyFinding/v1": print },
        "properties": { "tool": f.tool, "call": f.call },
    });
    if f.call_path.len() > 1 {
        let steps: Vec<Value> = f
            .call_path
            .iter()
            .map(|s| {
                json!({
                    "location": {
                        "physicalLocation": physical_location(&s.file, Some(s.line), None),
                        "message": { "text": s.function },
                    }
                })
            })
            .collect();
        r["codeFlows"] = json!([{ "threadFlows": [{ "locations": steps }] }]);
    }
    r
}
