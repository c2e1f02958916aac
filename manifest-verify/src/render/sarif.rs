//! `--format sarif`: SARIF 2.1.0 as GitHub code scanning accepts it.
//!
//! One rule per finding code (`tool.driver.rules`, all of them, so rule indices are stable),
//! one result per finding with `ruleId`, `ruleIndex`, `level` (`error` for widenings, `note`
//! for information), the message with its witness, a physical location (see
//! [`Inputs::locate`]) and a partial fingerprint that stays put when unrelated lines move.

use serde_json::{json, Value};

use super::Inputs;
use crate::findings::{Code, Finding, Report, Severity};

/// The SARIF log, pretty-printed, with a trailing newline.
///
/// The results are written one at a time into the log's text: a JSON value of the whole log
/// would hold every result at once, several times the size of the output.
pub fn render(report: &Report, inputs: Inputs<'_>) -> String {
    let skeleton = log(
        &Report {
            findings: Vec::new(),
        },
        inputs,
    );
    let text = serde_json::to_string_pretty(&skeleton).expect("values serialize");
    let empty = "\"results\": []";
    let at = text.find(empty).expect("the log has a results array");
    let mut out = String::with_capacity(text.len() + report.findings.len() * 600);
    out.push_str(&text[..at]);
    out.push_str("\"results\": [");
    for (i, f) in report.findings.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        let one = serde_json::to_string_pretty(&result(f, inputs)).expect("values serialize");
        for (j, line) in one.lines().enumerate() {
            if j > 0 {
                out.push('\n');
            }
            out.push_str("        ");
            out.push_str(line);
        }
    }
    out.push_str(if report.findings.is_empty() {
        "]"
    } else {
        "\n      ]"
    });
    out.push_str(&text[at + empty.len()..]);
    out.push('\n');
    out
}

/// The SARIF log as a JSON value.
pub fn log(report: &Report, inputs: Inputs<'_>) -> Value {
    let rules: Vec<Value> = Code::ALL.iter().map(|c| rule(*c)).collect();
    let results: Vec<Value> = report.findings.iter().map(|f| result(f, inputs)).collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "manifest-verify",
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    })
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Info => "note",
    }
}

fn rule(code: Code) -> Value {
    // `tool.fs.read.widened` → `ToolFsReadWidened`.
    let name: String = code
        .as_str()
        .split('.')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|first| first.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    json!({
        "id": code.as_str(),
        "name": name,
        "shortDescription": { "text": code.summary() },
        "fullDescription": { "text": code.summary() },
        "help": { "text": format!("{} See the manifest-verify README, section `{}`.", code.summary(), code.as_str()) },
        "defaultConfiguration": { "level": level(code.severity()) },
        "properties": { "tags": ["security", "toolpolicy"] },
    })
}

fn result(f: &Finding, inputs: Inputs<'_>) -> Value {
    let loc = inputs.locate(f);
    let mut text = f.message.clone();
    if let Some(w) = &f.witness {
        text.push_str(&format!(" Witness: {w}."));
    }
    let index = Code::ALL
        .iter()
        .position(|c| *c == f.code)
        .expect("every code is a rule");
    json!({
        "ruleId": f.code.as_str(),
        "ruleIndex": index,
        "level": level(f.severity()),
        "message": { "text": text },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": uri(&loc.file) },
                "region": { "startLine": loc.line, "startColumn": loc.column },
            },
            "logicalLocations": [{ "fullyQualifiedName": f.path, "kind": "member" }],
        }],
        "partialFingerprints": {
            "toolpolicyFinding/v1": fingerprint(&[f.code.as_str(), &f.path, f.witness.as_deref().unwrap_or("")]),
        },
    })
}

/// A relative path stays relative (GitHub resolves it against the repository root); an absolute
/// one becomes a `file://` URI. Spaces and `%` are percent-encoded.
fn uri(file: &str) -> String {
    let encoded = file.replace('%', "%25").replace(' ', "%20");
    if encoded.starts_with('/') {
        format!("file://{encoded}")
    } else {
        encoded
    }
}

/// FNV-1a over the parts, hex: stable across runs and platforms.
fn fingerprint(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}
