//! `--format json`: `{"widened": bool, "findings": [{"code", "severity", "tool", "path",
//! "message", "witness"}]}` (spec §5).

use crate::findings::Report;

/// Pretty-printed JSON with a trailing newline.
pub fn render(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report).expect("reports serialize");
    text.push('\n');
    text
}
