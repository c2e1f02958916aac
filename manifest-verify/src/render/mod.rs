//! Printing a [`Report`] in the formats of the command line (the contract is in
//! `policy-runtime/docs/cli.md`).
//!
//! Every format locates a finding the same way ([`Inputs::locate`]): at the tool's `source` when the
//! new manifest records one, otherwise at the line of the finding's key in the new manifest; a
//! removed tool points at its key in the old manifest. Inside a git work tree, files are
//! relative to the repository root. [`error`] prints the document of a run that could not
//! compare (exit 2).

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use policy_runtime::LoadError;

use crate::findings::{Code, Finding, Report};
use crate::source::Input;

pub mod github;
pub mod human;
pub mod json;
pub mod sarif;

/// An output format of `manifest-verify --format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// miette diagnostics with the old and new values and the witness.
    #[default]
    Human,
    /// `{"widened": bool, "findings": [...]}`.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning.
    Sarif,
    /// GitHub Actions workflow commands (`::error file=...::...`).
    Github,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "human" => Ok(Format::Human),
            "json" => Ok(Format::Json),
            "sarif" => Ok(Format::Sarif),
            "github" => Ok(Format::Github),
            other => Err(format!(
                "unknown format `{other}`: expected human, json, sarif or github"
            )),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Human => "human",
            Format::Json => "json",
            Format::Sarif => "sarif",
            Format::Github => "github",
        })
    }
}

/// The two manifests a report was made from.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// The old manifest.
    pub old: &'a Input,
    /// The new manifest.
    pub new: &'a Input,
}

/// Where a finding points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file, relative to the repository root when the inputs were given that way.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl<'a> Inputs<'a> {
    /// The manifest a finding is about (the new one, unless the tool only exists in the old)
    /// and the byte span of the nearest key to the finding's part.
    pub fn manifest_span(&self, f: &Finding) -> (&'a Input, Option<Range<usize>>) {
        let input = if self.new.manifest.tools.contains_key(&f.tool) {
            self.new
        } else {
            self.old
        };
        let mut path = vec!["tools", f.tool.as_str()];
        path.extend(f.part().split('.').filter(|s| !s.is_empty()));
        (input, input.spans().nearest(&path))
    }

    /// Notices about the inputs (e.g. an absent base), old first.
    pub fn notices(&self) -> impl Iterator<Item = &'a str> {
        [self.old, self.new]
            .into_iter()
            .filter_map(|i| i.notice.as_deref())
    }

    /// Where the finding points: the tool's `source` in the new manifest, or the key's line in
    /// the manifest. A removed tool points into the old manifest: its source is gone.
    pub fn locate(&self, f: &Finding) -> Location {
        let entry = match f.code {
            Code::ToolRemoved => None,
            _ => self.new.manifest.tools.get(&f.tool),
        };
        if let Some(src) = entry.and_then(|e| e.source.as_ref()) {
            let file = crate::repo::current().map_or_else(
                || src.file.clone(),
                |r| r.source_file(&self.new.file, &src.file),
            );
            return Location {
                file,
                line: src.line.max(1) as usize,
                column: 1,
            };
        }
        let (input, span) = self.manifest_span(f);
        // The scan's own count: recounting from the start for each finding is quadratic.
        let (line, column) = span.map_or((1, 1), |s| {
            input
                .spans()
                .position(s.start)
                .unwrap_or_else(|| crate::locate::KeySpans::line_col(&input.text, s.start))
        });
        Location {
            file: input.file.clone(),
            line,
            column,
        }
    }
}

/// The document printed on stdout when the comparison could not be made (exit 2), so that a
/// consumer of `json`, `sarif` or `github` output reads an error instead of nothing: `{"error":
/// {...}}`, a SARIF log whose invocation failed, or an `::error` command. `None` for `human`,
/// whose diagnostic goes to stderr only. An error whose `file` is empty is about no file (bad
/// usage): it has no location.
pub fn error(err: &LoadError, format: Format) -> Option<String> {
    match format {
        Format::Human => None,
        Format::Json => Some(json::error(err)),
        Format::Sarif => Some(sarif::error(err)),
        Format::Github => Some(github::error(err)),
    }
}

/// An error as one line: `file:line:column: message`, or the message alone when the error is
/// about no file (bad usage).
fn error_text(err: &LoadError) -> String {
    if err.file().is_empty() {
        err.message().to_string()
    } else {
        err.to_string()
    }
}

/// The report in `format`, ending with a newline.
pub fn render(report: &Report, inputs: Inputs<'_>, format: Format, color: bool) -> String {
    match format {
        Format::Human => human::render(report, inputs, color),
        Format::Json => json::render(report),
        Format::Sarif => sarif::render(report, inputs),
        Format::Github => github::render(report, inputs),
    }
}
