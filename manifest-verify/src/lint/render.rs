//! Printing a lint [`Report`]: human (miette, with the offending line), JSON and SARIF 2.1.0.

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, NamedSource};
use serde_json::{json, Value};

use super::{Finding, Report};

/// The human form: one diagnostic per finding with its source line and call path, then a
/// summary line.
pub fn human(report: &Report) -> String {
    let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor());
    let mut out = String::new();
    for f in &report.findings {
        let text = report
            .sources
            .iter()
            .find(|(name, _)| *name == f.file)
            .map(|(_, t)| t.as_str())
            .unwrap_or("");
        let offset = byte_offset(text, f.line, f.column);
        let mut diagnostic = MietteDiagnostic::new(f.message.clone())
            .with_code(f.code.clone())
            .with_label(LabeledSpan::at(
                offset..offset + f.len.min(text.len() - offset.min(text.len())),
                f.code.clone(),
            ));
        if f.call_path.len() > 1 {
            let steps: Vec<String> = f
                .call_path
                .iter()
                .map(|s| format!("{} ({}:{})", s.function, s.file, s.line))
                .collect();
            diagnostic = diagnostic.with_help(format!("call path: {}", steps.join(" → ")));
        }
        let report = miette::Report::new(diagnostic)
            .with_source_code(NamedSource::new(f.file.clone(), text.to_string()));
        let _ = handler.render_report(&mut out, report.as_ref());
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
/// code flow.
pub fn sarif(report: &Report) -> String {
    let mut codes: Vec<&str> = report.findings.iter().map(|f| f.code.as_str()).collect();
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
    let results: Vec<Value> = report.findings.iter().map(result).collect();
    let value = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "toolpolicy-lint",
                "rules": rules,
            }},
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&value).expect("a report serializes") + "\n"
}

fn rule_text(code: &str) -> &'static str {
    match code {
        "lint.fs.read" => "A tool reads files without declaring fs.read",
        "lint.fs.write" => "A tool writes files without declaring fs.write",
        "lint.net" => "A tool uses the network without declaring net",
        "lint.exec" => "A tool starts programs although exec is denied",
        "lint.env" => "A tool reads or changes environment variables although env is denied",
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

/// Byte offset of 1-based `line` and 1-based character `column`.
fn byte_offset(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let rest = &text[start.min(text.len())..];
    start
        + rest
            .char_indices()
            .nth(column.saturating_sub(1))
            .map_or(rest.len(), |(i, _)| i)
}
