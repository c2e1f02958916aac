//! SARIF 2.1.0 as GitHub code scanning accepts it: the one renderer of both command lines,
//! `manifest-verify --format sarif` (the verifier's findings, [`render`]) and
//! `toolpolicy-lint --format sarif` (the capability lint's, `lint::render::sarif`).
//!
//! A log is one [`Run`]: every rule of the tool (`tool.driver.rules`, all of them, so rule
//! indices are stable) with `shortDescription`, `fullDescription`, `help` (text and Markdown)
//! and, when the crate names its repository, a `helpUri` into the finding codes reference; one
//! result per finding with `ruleId`, `ruleIndex`, `level`, the message, a physical location and
//! a partial fingerprint ([`fingerprint`]) made of what the finding is about rather than its
//! line, so that it stays put when unrelated lines move. Notices and errors of the run are
//! `invocations[0].toolExecutionNotifications`. Artifact URIs are percent-encoded per RFC 3986
//! ([`uri`]). Both tools' output is checked against the OASIS SARIF 2.1.0 schema in
//! `tests/cli.rs`.

use policy_runtime::LoadError;
use serde_json::{json, Value};

use super::Inputs;
use crate::findings::{Code, Finding, Report, Severity};

/// The schema the log declares (OASIS SARIF 2.1.0, errata 01).
const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// One rule of a run, with the texts code scanning shows for it.
#[derive(Clone, Debug)]
pub struct RuleDoc {
    /// The rule id (`tool.net.widened`, `lint.fs.write`).
    pub id: String,
    /// The id in UpperCamelCase (`ToolNetWidened`).
    pub name: String,
    /// One line.
    pub short: String,
    /// What it checks and why.
    pub full: String,
    /// What to do about it, in Markdown (its text form drops the backticks).
    pub help: String,
    /// The heading in `policy-runtime/docs/findings.md` that documents it.
    pub anchor: &'static str,
    /// `error` or `note`.
    pub level: &'static str,
}

impl RuleDoc {
    /// A rule named after its id.
    pub fn new(
        id: &str,
        short: &str,
        full: String,
        help: String,
        anchor: &'static str,
        level: &'static str,
    ) -> Self {
        RuleDoc {
            name: camel_case(id),
            id: id.to_string(),
            short: short.to_string(),
            full,
            help,
            anchor,
            level,
        }
    }

    fn to_json(&self) -> Value {
        let mut rule = json!({
            "id": self.id,
            "name": self.name,
            "shortDescription": { "text": self.short },
            "fullDescription": { "text": self.full },
            "help": { "text": self.help.replace('`', ""), "markdown": self.help },
            "defaultConfiguration": { "level": self.level },
            "properties": { "tags": ["security", "toolpolicy"] },
        });
        if let Some(uri) = doc_uri(
            option_env!("CARGO_PKG_REPOSITORY").unwrap_or(""),
            self.anchor,
        ) {
            rule["helpUri"] = json!(uri);
        }
        rule
    }
}

/// `tool.fs.read.widened` → `ToolFsReadWidened`.
fn camel_case(id: &str) -> String {
    id.split('.')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|first| first.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The address of the finding codes reference at `anchor`, in the repository the crate's
/// manifest names (`repository = "https://github.com/…"`); `None` when it names none, since
/// a `helpUri` must be absolute and the reference is not published anywhere else.
///
/// ```
/// use manifest_verify::render::sarif::doc_uri;
///
/// assert_eq!(
///     doc_uri("https://github.com/o/toolpolicy", "capability-lint-codes").as_deref(),
///     Some("https://github.com/o/toolpolicy/blob/HEAD/policy-runtime/docs/findings.md#capability-lint-codes")
/// );
/// assert_eq!(doc_uri("", "capability-lint-codes"), None);
/// ```
pub fn doc_uri(repository: &str, anchor: &str) -> Option<String> {
    let repository = repository.trim_end_matches('/');
    repository
        .starts_with("https://")
        .then(|| format!("{repository}/blob/HEAD/policy-runtime/docs/findings.md#{anchor}"))
}

/// One run of a tool: its rules and how the invocation went. The results are given when the
/// log is written.
#[derive(Clone, Debug)]
pub struct Run {
    /// `tool.driver.name`.
    pub tool: &'static str,
    /// Every rule the tool has.
    pub rules: Vec<RuleDoc>,
    /// Whether the run could do its whole job.
    pub success: bool,
    /// The exit code of the command line.
    pub exit_code: i32,
    /// `toolExecutionNotifications`.
    pub notifications: Vec<Value>,
}

impl Run {
    /// The index of rule `id` in [`Run::rules`].
    pub fn rule_index(&self, id: &str) -> usize {
        self.rules
            .iter()
            .position(|r| r.id == id)
            .expect("every result's rule is a rule of the run")
    }

    /// The log with `results`, as a JSON value.
    pub fn log(&self, results: Vec<Value>) -> Value {
        json!({
            "$schema": SCHEMA,
            "version": "2.1.0",
            "runs": [{
                "tool": {
                    "driver": {
                        "name": self.tool,
                        "semanticVersion": env!("CARGO_PKG_VERSION"),
                        "rules": self.rules.iter().map(RuleDoc::to_json).collect::<Vec<_>>(),
                    }
                },
                "invocations": [{
                    "executionSuccessful": self.success,
                    "exitCode": self.exit_code,
                    "toolExecutionNotifications": self.notifications,
                }],
                "columnKind": "unicodeCodePoints",
                "results": results,
            }]
        })
    }

    /// The log, pretty-printed, with a trailing newline. The results are written one at a time
    /// into the log's text: a JSON value of the whole log would hold every result at once,
    /// several times the size of the output.
    pub fn render(&self, results: impl ExactSizeIterator<Item = Value>) -> String {
        let text = serde_json::to_string_pretty(&self.log(Vec::new())).expect("values serialize");
        let empty = "\"results\": []";
        let at = text.find(empty).expect("the log has a results array");
        let mut out = String::with_capacity(text.len() + results.len() * 600);
        out.push_str(&text[..at]);
        out.push_str("\"results\": [");
        let mut any = false;
        for (i, r) in results.enumerate() {
            any = true;
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            let one = serde_json::to_string_pretty(&r).expect("values serialize");
            for (j, line) in one.lines().enumerate() {
                if j > 0 {
                    out.push('\n');
                }
                out.push_str("        ");
                out.push_str(line);
            }
        }
        out.push_str(if any { "\n      ]" } else { "]" });
        out.push_str(&text[at + empty.len()..]);
        out.push('\n');
        out
    }
}

/// A physical location: `file` (made a URI by [`uri`]), 1-based `line` and `column` when known.
pub fn physical_location(file: &str, line: Option<usize>, column: Option<usize>) -> Value {
    let mut physical = json!({ "artifactLocation": { "uri": uri(file) } });
    if let Some(line) = line.filter(|l| *l > 0) {
        let mut region = json!({ "startLine": line });
        if let Some(column) = column.filter(|c| *c > 0) {
            region["startColumn"] = json!(column);
        }
        physical["region"] = region;
    }
    physical
}

/// The verifier's run: its rules, and an invocation that ends with the report's exit code.
fn run(report: &Report, inputs: Inputs<'_>) -> Run {
    Run {
        tool: "manifest-verify",
        rules: Code::ALL.iter().map(|c| rule(*c)).collect(),
        success: true,
        exit_code: report.exit_code(),
        notifications: inputs
            .notices()
            .map(|text| json!({ "level": "note", "message": { "text": text } }))
            .collect(),
    }
}

/// The SARIF log, pretty-printed, with a trailing newline.
pub fn render(report: &Report, inputs: Inputs<'_>) -> String {
    run(report, inputs).render(report.findings.iter().map(|f| result(f, inputs)))
}

/// The SARIF log as a JSON value.
pub fn log(report: &Report, inputs: Inputs<'_>) -> Value {
    let results = report.findings.iter().map(|f| result(f, inputs)).collect();
    run(report, inputs).log(results)
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
        let (line, column) = match (err.line(), err.column()) {
            (Some(line), Some(column)) => (Some(line), Some(column)),
            _ => (None, None),
        };
        notification["locations"] =
            json!([{ "physicalLocation": physical_location(&file, line, column) }]);
    }
    let run = Run {
        tool: "manifest-verify",
        rules: Vec::new(),
        success: false,
        exit_code: crate::cli::EXIT_INVALID,
        notifications: vec![notification],
    };
    let mut text = serde_json::to_string_pretty(&run.log(Vec::new())).expect("values serialize");
    text.push('\n');
    text
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Info => "note",
    }
}

fn rule(code: Code) -> RuleDoc {
    RuleDoc::new(
        code.as_str(),
        code.summary(),
        code.summary().to_string(),
        format!(
            "{} The manifest-verify README shows an example of `{}`; the finding codes \
             reference explains when it is reported.",
            code.summary(),
            code.as_str()
        ),
        "widening-and-finding-codes",
        level(code.severity()),
    )
}

fn result(f: &Finding, inputs: Inputs<'_>) -> Value {
    let loc = inputs.locate(f);
    let text = f.text();
    // `rule` lists `Code::ALL` in order.
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
            "physicalLocation": physical_location(&loc.file, Some(loc.line), Some(loc.column)),
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

/// FNV-1a over the parts, hex: stable across runs and platforms. The parts name what a finding
/// is about (rule, tool, the place in the manifest or the call and its normalized source line),
/// never a line number alone.
pub fn fingerprint(parts: &[&str]) -> String {
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
