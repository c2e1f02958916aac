//! Printing a lint [`Report`]: human (miette, with the offending line), JSON and SARIF 2.1.0.

use std::collections::HashMap;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};
use serde_json::{json, Value};

use super::{Finding, LintError, Report};

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
        let mut diagnostic = MietteDiagnostic::new(f.message.clone()).with_code(f.code.clone());
        let mut help = Vec::new();
        let shown = indexed
            .get(f.file.as_str())
            .and_then(|index| Some((index, excerpt(&f.file, index, f.line)?)));
        if let Some((index, _)) = &shown {
            let line = index.line(f.line).unwrap_or(0..0);
            let text = &index.text[line.clone()];
            let column = text
                .char_indices()
                .nth(f.column.saturating_sub(1))
                .map_or(text.len(), |(i, _)| i);
            let start = line.start + column;
            let len = f.len.min(line.end - start);
            diagnostic = diagnostic.with_label(LabeledSpan::at(start..start + len, f.code.clone()));
        } else {
            help.push(format!("at {}:{}:{}", f.file, f.line, f.column));
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

/// SARIF 2.1.0: one rule per finding code, one result per finding with the call path as a
/// code flow. Code that could not be read is a result too (rule `lint.incomplete`, the verdict
/// does not cover it), and a tool execution notification of an unsuccessful invocation.
pub fn sarif(report: &Report) -> String {
    let mut codes: Vec<&str> = report.findings.iter().map(|f| f.code.as_str()).collect();
    if !report.problems.is_empty() {
        codes.push(INCOMPLETE);
    }
    codes.sort_unstable();
    codes.dedup();
    let rules: Vec<Value> = codes
        .iter()
        .map(|c| {
            json!({
                "id": c,
                "shortDescription": { "text": rule_text(c) },
            })
        })
        .collect();
    let mut results: Vec<Value> = report.findings.iter().map(result).collect();
    results.extend(report.problems.iter().map(problem_result));
    let notifications: Vec<Value> = report
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
        .collect();
    let value = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "toolpolicy-lint",
                "rules": rules,
            }},
            "invocations": [{
                "executionSuccessful": report.problems.is_empty(),
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&value).expect("a report serializes") + "\n"
}

/// The rule of results for code the lint could not read.
const INCOMPLETE: &str = "lint.incomplete";

fn problem_result(p: &LintError) -> Value {
    let mut r = json!({
        "ruleId": INCOMPLETE,
        "level": "error",
        "message": { "text": p.to_string() },
    });
    if let Some(location) = problem_location(p) {
        r["locations"] = json!([location]);
    }
    r
}

fn problem_location(p: &LintError) -> Option<Value> {
    let (path, line) = p.location()?;
    let uri = if path.is_absolute() {
        format!("file://{}", path.display())
    } else {
        path.display().to_string()
    };
    let mut physical = json!({ "artifactLocation": { "uri": uri } });
    if let Some(line) = line.filter(|l| *l > 0) {
        physical["region"] = json!({ "startLine": line });
    }
    Some(json!({ "physicalLocation": physical }))
}

fn rule_text(code: &str) -> &'static str {
    match code {
        "lint.fs.read" => "A tool reads files without declaring fs.read",
        "lint.fs.write" => "A tool writes files without declaring fs.write",
        "lint.net" => "A tool uses the network without declaring net",
        "lint.exec" => "A tool starts programs although exec is denied",
        "lint.env" => "A tool reads or changes environment variables although env is denied",
        INCOMPLETE => "Code that the lint could not read, so the verdict does not cover it",
        _ => "A tool calls code that cannot be analysed",
    }
}

fn location(file: &str, line: usize, column: Option<usize>) -> Value {
    let mut region = json!({ "startLine": line });
    if let Some(c) = column {
        region["startColumn"] = json!(c);
    }
    json!({ "physicalLocation": {
        "artifactLocation": { "uri": file },
        "region": region,
    }})
}

fn result(f: &Finding) -> Value {
    let mut r = json!({
        "ruleId": f.code,
        "level": "error",
        "message": { "text": f.message },
        "locations": [location(&f.file, f.line, Some(f.column))],
        "properties": { "tool": f.tool, "call": f.call },
    });
    if f.call_path.len() > 1 {
        let steps: Vec<Value> = f
            .call_path
            .iter()
            .map(|s| {
                json!({
                    "location": {
                        "physicalLocation": location(&s.file, s.line, None)["physicalLocation"],
                        "message": { "text": s.function },
                    }
                })
            })
            .collect();
        r["codeFlows"] = json!([{ "threadFlows": [{ "locations": steps }] }]);
    }
    r
}
