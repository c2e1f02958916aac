//! `--format sarif`: SARIF 2.1.0 as GitHub code scanning accepts it.
//!
//! One rule per finding code (`tool.driver.rules`, all of them, so rule indices are stable),
//! one result per finding with `ruleId`, `ruleIndex`, `level` (`error` for widenings, `note`
//! for information), the message with its witness, a physical location (see
//! [`Inputs::locate`]) and a partial fingerprint that stays put when unrelated lines move.
//! Notices about the inputs and the error of a run that could not compare are
//! `invocations[0].toolExecutionNotifications`. Artifact URIs are percent-encoded per RFC 3986.
//! The output is checked against the OASIS SARIF 2.1.0 schema in `tests/cli.rs`.

use policy_runtime::LoadError;
use serde_json::{json, Value};

use super::Inputs;
use crate::findings::{Code, Finding, Report, Severity};

/// The schema the log declares (OASIS SARIF 2.1.0, errata 01).
const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// The SARIF log, pretty-printed, with a trailing newline.
///
/// The results are written one at a time into the log's text: a JSON value of the whole log
/// would hold every result at once, several times the size of the output.
pub fn render(report: &Report, inputs: Inputs<'_>) -> String {
    let mut skeleton = log(
        &Report {
            findings: Vec::new(),
        },
        inputs,
    );
    // The skeleton has no results, but its invocation reports the real run's exit code.
    skeleton["runs"][0]["invocations"][0]["exitCode"] = json!(report.exit_code());
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
    let notices: Vec<Value> = inputs
        .notices()
        .map(|text| json!({ "level": "note", "message": { "text": text } }))
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": driver(rules),
            "invocations": [{
                "executionSuccessful": true,
                "exitCode": report.exit_code(),
                "toolExecutionNotifications": notices,
            }],
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    })
}

/// The SARIF log of a run that could not compare (exit 2): no results, and an invocation that
/// failed with the error, located at the file, line and column when known.
pub fn error(err: &LoadError) -> String {
    let mut notification = json!({
        "level": "error",
        "message": { "text": super::error_text(err) },
        "descriptor": { "id": "toolpolicy::load" },
    });
    if !err.file().is_empty() {
        let file = crate::source::location_file(err.file());
        let mut physical = json!({ "artifactLocation": { "uri": uri(&file) } });
        if let (Some(line), Some(column)) = (err.line(), err.column()) {
            physical["region"] = json!({ "startLine": line, "startColumn": column });
        }
        notification["locations"] = json!([{ "physicalLocation": physical }]);
    }
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": driver(Vec::new()),
            "invocations": [{
                "executionSuccessful": false,
                "exitCode": crate::cli::EXIT_INVALID,
                "toolExecutionNotifications": [notification],
            }],
            "columnKind": "unicodeCodePoints",
            "results": [],
        }]
    });
    let mut text = serde_json::to_string_pretty(&log).expect("values serialize");
    text.push('\n');
    text
}

fn driver(rules: Vec<Value>) -> Value {
    json!({
        "driver": {
            "name": "manifest-verify",
            "semanticVersion": env!("CARGO_PKG_VERSION"),
            "rules": rules,
        }
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
    let text = f.text();
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

/// A relative path stays a relative reference (GitHub resolves it against the repository
/// root); an absolute one becomes a `file://` URI. Every byte but RFC 3986's unreserved
/// characters and the `/` separator is percent-encoded (UTF-8), so `#`, `?`, `[`, spaces and
/// non-ASCII names survive, and a `:` in the first segment cannot read as a scheme.
///
/// ```text
/// src/café [gen]/x#1.rs → src/caf%C3%A9%20%5Bgen%5D/x%231.rs
/// ```
pub fn uri(file: &str) -> String {
    let mut encoded = String::with_capacity(file.len());
    for b in file.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            encoded.push(char::from(b));
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
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

#[cfg(test)]
mod tests {
    #[test]
    fn uris_are_percent_encoded_per_rfc_3986() {
        assert_eq!(
            super::uri("src/café [gen]/x#1.rs"),
            "src/caf%C3%A9%20%5Bgen%5D/x%231.rs"
        );
        assert_eq!(super::uri("a:b/100%?.rs"), "a%3Ab/100%25%3F.rs");
        assert_eq!(super::uri("/abs/t m.json"), "file:///abs/t%20m.json");
        assert_eq!(
            super::uri("examples/tools.manifest.json"),
            "examples/tools.manifest.json"
        );
    }
}
