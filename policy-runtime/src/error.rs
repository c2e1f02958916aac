//! Errors from reading manifests and policy files.
//!
//! A [`LoadError`] is a [`miette::Diagnostic`]: rendered with miette it shows the file, the line
//! and column, the offending key and a label under it.
//!
//! ```
//! use policy_runtime::manifest::Manifest;
//!
//! let err = Manifest::from_json_str("tools.json", "{\n  \"manifest_version\": 1,\n  \"tool\": {}\n}")
//!     .unwrap_err();
//! assert_eq!(err.file(), "tools.json");
//! assert_eq!(err.line(), Some(3));
//! assert!(err.to_string().starts_with("tools.json:3:"));
//! assert!(err.to_string().contains("unknown field `tool`"));
//! ```

use std::fmt;
use std::io::Write;
use std::path::Path;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode, SourceSpan};

/// A manifest or policy file could not be read or is invalid.
#[derive(Debug)]
pub struct LoadError(Box<Inner>);

#[derive(Debug)]
struct Inner {
    file: String,
    line: Option<usize>,
    column: Option<usize>,
    message: String,
    help: Option<String>,
    source_code: Option<NamedSource<String>>,
    span: Option<SourceSpan>,
}

impl LoadError {
    /// The file (or name) the error is about.
    pub fn file(&self) -> &str {
        &self.0.file
    }

    /// The 1-based line, when known.
    pub fn line(&self) -> Option<usize> {
        self.0.line
    }

    /// The 1-based column, when known.
    pub fn column(&self) -> Option<usize> {
        self.0.column
    }

    /// The message without the location prefix.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// A plain error about `file` with no position (I/O errors, missing tools).
    pub fn plain(file: &str, message: impl Into<String>) -> LoadError {
        LoadError(Box::new(Inner {
            file: file.to_string(),
            line: None,
            column: None,
            message: message.into(),
            help: None,
            source_code: None,
            span: None,
        }))
    }

    /// An error at a byte range of `text`.
    pub fn at(
        file: &str,
        text: &str,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
    ) -> LoadError {
        let start = span.start.min(text.len());
        let (line, column) = line_col(text, start);
        let message = message.into();
        LoadError(Box::new(Inner {
            file: file.to_string(),
            line: Some(line),
            column: Some(column),
            help: help_for(&message),
            message,
            source_code: Some(NamedSource::new(file, text.to_string())),
            span: Some((start, span_len(text, start, span.end)).into()),
        }))
    }

    pub(crate) fn from_json(file: &str, text: &str, err: &serde_json::Error) -> LoadError {
        if err.line() == 0 {
            return LoadError::plain(file, err.to_string());
        }
        let offset = offset_of(text, err.line(), err.column());
        let message = strip_position(&err.to_string());
        // serde_json points just past the offending token; label the key or value it names.
        let span = key_span(text, offset, &message).unwrap_or(offset.saturating_sub(1)..offset);
        LoadError::at(file, text, span, message)
    }

    pub(crate) fn from_toml(file: &str, text: &str, err: &toml::de::Error) -> LoadError {
        let message = err.message().trim().to_string();
        match err.span() {
            Some(span) => LoadError::at(file, text, span, message),
            None => LoadError::plain(file, message),
        }
    }

    pub(crate) fn missing_tool<'a>(
        file: &str,
        tool: &str,
        known: impl Iterator<Item = &'a String>,
    ) -> LoadError {
        let known: Vec<&str> = known.map(String::as_str).collect();
        let mut e = LoadError::plain(file, format!("no tool `{tool}` in the manifest"));
        e.0.help = Some(if known.is_empty() {
            "the manifest has no tools".to_string()
        } else {
            format!("tools in this manifest: {}", known.join(", "))
        });
        e
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0.line, self.0.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.0.file, self.0.message),
            _ => write!(f, "{}: {}", self.0.file, self.0.message),
        }
    }
}

impl std::error::Error for LoadError {}

impl Diagnostic for LoadError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new("toolpolicy::load"))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.0.source_code.as_ref().map(|s| s as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.0.span?;
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some("here".to_string()),
            span,
        ))))
    }
}

fn span_len(text: &str, start: usize, end: usize) -> usize {
    let end = end.clamp(start, text.len());
    if end == start && start < text.len() {
        1
    } else {
        end - start
    }
}

fn help_for(message: &str) -> Option<String> {
    if message.contains("unknown field") {
        Some("remove the key or fix its spelling; the expected keys are listed above".into())
    } else if message.contains("invalid glob") {
        Some("globs are absolute, normalized paths: `/dir/**`, `/dir/*.txt`".into())
    } else if message.contains("manifest_version") {
        Some("regenerate the manifest with this version of toolpolicy".into())
    } else {
        None
    }
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Byte offset of serde_json's 1-based line and column.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    floor_char_boundary(text, line_start + column)
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// The span of the quoted key named in "unknown field `x`" messages, searched backwards from
/// where the parser stopped.
fn key_span(text: &str, offset: usize, message: &str) -> Option<std::ops::Range<usize>> {
    let key = message.split('`').nth(1)?;
    let quoted = format!("\"{key}\"");
    let start = text[..floor_char_boundary(text, offset)].rfind(&quoted)?;
    Some(start..start + quoted.len())
}

pub(crate) fn read_file(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path)
        .map_err(|e| LoadError::plain(&path.display().to_string(), format!("cannot read: {e}")))
}

/// Writes `bytes` to a sibling temporary file and renames it over `path`.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no file name"))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Manifest;

    #[test]
    fn names_file_line_column_and_key() {
        let text = "{\n  \"manifest_version\": 1,\n  \"tools\": {\n    \"t\": { \"fs\": { \"reed\": [] } }\n  }\n}";
        let err = Manifest::from_json_str("m.json", text).unwrap_err();
        assert_eq!(err.line(), Some(4));
        assert!(err.message().contains("unknown field `reed`"), "{err}");
        let span = err.0.span.unwrap();
        assert_eq!(&text[span.offset()..span.offset() + span.len()], "\"reed\"");
    }

    #[test]
    fn invalid_glob_is_located() {
        let text = "{\"manifest_version\": 1, \"tools\": {\"t\": {\"fs\": {\"write\": [\"/out/../etc\"]}}}}";
        let err = Manifest::from_json_str("m.json", text).unwrap_err();
        assert_eq!(err.line(), Some(1));
        assert!(err.message().contains("`..`"), "{err}");
        assert!(err.0.help.is_some());
    }

    #[test]
    fn atomic_write_replaces_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
