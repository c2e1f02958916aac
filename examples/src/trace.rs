//! Terminal output of the demo: colours when the output is a terminal (and `NO_COLOR` is
//! unset), plain text otherwise.

use std::io::IsTerminal;

/// ANSI styling that switches itself off for pipes and `NO_COLOR`.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Colours when stdout is a terminal and `NO_COLOR` is not set.
    pub fn detect() -> Style {
        Style {
            color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    /// Never colours.
    pub fn plain() -> Style {
        Style { color: false }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Green: allowed.
    pub fn ok(&self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Red: denied.
    pub fn bad(&self, text: &str) -> String {
        self.paint("31", text)
    }

    /// Yellow: failed inside the sandbox.
    pub fn warn(&self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Bold.
    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Dim: narration and details.
    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }
}

/// Indents every line of `text` and cuts it to `max_lines`.
pub fn indent(text: &str, prefix: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(max_lines)
        .map(|l| format!("{prefix}{l}"))
        .collect();
    if lines.len() > max_lines {
        out.push(format!(
            "{prefix}... ({} more lines)",
            lines.len() - max_lines
        ));
    }
    out.join("\n")
}
