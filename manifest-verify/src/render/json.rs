//! `--format json`: `{"widened": bool, "findings": [{"code", "severity", "tool", "path",
//! "message", "witness"}]}`, or `{"error": {"file", "line", "column", "message"}}` when the
//! comparison could not be made (exit 2). The contract is in `policy-runtime/docs/cli.md`.

use policy_runtime::LoadError;

use crate::findings::Report;

/// Pretty-printed JSON with a trailing newline.
pub fn render(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report).expect("reports serialize");
    text.push('\n');
    text
}

/// `{"error": {"file", "line", "column", "message"}}` (`line` and `column` are `null` when
/// unknown, and `file` too for bad usage), pretty-printed with a trailing newline.
pub fn error(err: &LoadError) -> String {
    let value = serde_json::json!({
        "error": {
            "file": (!err.file().is_empty()).then(|| err.file()),
            "line": err.line(),
            "column": err.column(),
            "message": err.message(),
        }
    });
    let mut text = serde_json::to_string_pretty(&value).expect("values serialize");
    text.push('\n');
    text
}
