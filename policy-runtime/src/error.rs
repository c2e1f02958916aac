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

    /// A JSON error; `field` is the path of the value it is about (`tools.t.fs`), or empty.
    pub(crate) fn from_json(
        file: &str,
        text: &str,
        err: &serde_json::Error,
        field: &str,
    ) -> LoadError {
        if err.line() == 0 {
            return LoadError::plain(file, with_field(in_user_terms(&err.to_string()), field));
        }
        let offset = offset_of(text, err.line(), err.column());
        let message = with_field(in_user_terms(&strip_position(&err.to_string())), field);
        // serde_json points just past the offending token; label the key or value it names.
        let span = key_span(text, offset, &message).unwrap_or(offset.saturating_sub(1)..offset);
        LoadError::at(file, text, span, message)
    }

    /// A TOML error; `field` as for [`LoadError::from_json`].
    pub(crate) fn from_toml(
        file: &str,
        text: &str,
        err: &toml::de::Error,
        field: &str,
    ) -> LoadError {
        let message = with_field(in_user_terms(err.message().trim()), field);
        match err.span() {
            Some(span) => {
                let span = toml_key_span(text, &span, &message).unwrap_or(span);
                LoadError::at(file, text, span, message)
            }
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

/// Appends the field path to a message: `... (at `tools.t.limits.timeout_ms`)`.
fn with_field(message: String, field: &str) -> String {
    // serde_path_to_error spells an unknown position `?` and the document itself `.`.
    if field.is_empty() || field == "." || field == "?" {
        message
    } else {
        format!("{message} (at `{field}`)")
    }
}

/// Rewrites serde's words for Rust types into the manifest's: `u32` becomes the range of whole
/// numbers it holds, `sequence` a list, `map` an object. (Struct names never reach a message:
/// every object says what it expects, see `crate::objects`.)
fn in_user_terms(message: &str) -> String {
    const WORDS: [(&str, &str); 12] = [
        (
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        ),
        (
            "expected u64",
            "expected a whole number from 0 to 18446744073709551615",
        ),
        ("expected u16", "expected a whole number from 0 to 65535"),
        ("expected u8", "expected a whole number from 0 to 255"),
        (" as i128", ""),
        (" as i64", ""),
        ("expected a sequence", "expected a list `[...]`"),
        ("invalid type: sequence", "invalid type: list"),
        ("expected a map", "expected an object"),
        ("invalid type: map", "invalid type: object"),
        ("expected a boolean", "expected true or false"),
        ("floating point", "number with a fraction"),
    ];
    let mut out = message.to_string();
    for (rust, user) in WORDS {
        if out.contains(rust) {
            out = out.replace(rust, user);
        }
    }
    out
}

fn help_for(message: &str) -> Option<String> {
    if message.contains("unknown field") {
        Some("remove the key or fix its spelling; the expected keys are listed above".into())
    } else if message.contains("invalid glob") {
        Some("globs are absolute, normalized paths: `/dir/**`, `/dir/*.txt`".into())
    } else if message.contains("unsupported manifest_version") {
        Some("regenerate the manifest with this version of toolpolicy".into())
    } else if message.contains("expected a manifest object") {
        Some("a manifest is a JSON object: {\"manifest_version\": 1, \"tools\": {...}}".into())
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

/// The span of the key a TOML error about a table names first (`max_invocations` in
/// "`max_invocations` contradicts `forbidden = true`", raised at `[constraints]`), when that
/// table holds it: the error points at the key, not at the table's header.
fn toml_key_span(
    text: &str,
    table: &std::ops::Range<usize>,
    message: &str,
) -> Option<std::ops::Range<usize>> {
    use toml::de::{DeTable, DeValue};

    /// The span of `key` in the table at `at`, searched from `table` (spanning `here`) down.
    fn find(
        table: &DeTable<'_>,
        here: std::ops::Range<usize>,
        at: &std::ops::Range<usize>,
        key: &str,
    ) -> Option<std::ops::Range<usize>> {
        if here == *at {
            return table.keys().find(|k| k.get_ref() == key).map(|k| k.span());
        }
        let nested = |v: &toml::Spanned<DeValue<'_>>| match v.get_ref() {
            DeValue::Table(t) => find(t, v.span(), at, key),
            _ => None,
        };
        table.values().find_map(|v| match v.get_ref() {
            DeValue::Array(items) => items.iter().find_map(nested),
            _ => nested(v),
        })
    }
    let key = message.split('`').nth(1)?;
    let doc = DeTable::parse(text).ok()?;
    find(doc.get_ref(), doc.span(), table, key)
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

    /// Words of the Rust implementation that must never reach a user.
    pub(crate) const RUST_WORDS: [&str; 9] = [
        "struct ", "enum ", "Repr", "u32", "u64", "i64", "i128", "sequence", "variant",
    ];

    /// Issue 18 item 16: bad manifests and TOML policies are explained in the manifest's terms,
    /// with the file, line and the field's path.
    #[test]
    fn errors_use_the_manifests_words_and_name_the_field() {
        use crate::policy::ToolPolicy;
        let json_cases = [
            (r#"{"manifest_version": 1, "tools": {"t": 5}}"#, "tools.t"),
            (r#"{"manifest_version": 1, "tools": {"t": []}}"#, "tools.t"),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"fs": 3}}}"#,
                "tools.t.fs",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"fs": []}}}"#,
                "tools.t.fs",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"limits": "x"}}}"#,
                "tools.t.limits",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"constraints": 1}}}"#,
                "tools.t.constraints",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"constraints": {"max_invocations": -1}}}}"#,
                "tools.t.constraints.max_invocations",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"limits": {"timeout_ms": 1.5}}}}"#,
                "tools.t.limits.timeout_ms",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"source": {"file": "a", "line": -1}}}}"#,
                "tools.t.source.line",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"source": 3}}}"#,
                "tools.t.source",
            ),
            (
                r#"{"manifest_version": "1", "tools": {}}"#,
                "manifest_version",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"risk": 3}}}"#,
                "tools.t.risk",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"risk": "extreme"}}}"#,
                "tools.t.risk",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"fs": {"read": [3]}}}}"#,
                "tools.t.fs.read[0]",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"t": {"constraints": {"forbidden": 1}}}}"#,
                "tools.t.constraints.forbidden",
            ),
        ];
        for (text, field) in json_cases {
            let err = Manifest::from_json_str("m.json", text)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("m.json:1:"), "{err}");
            assert!(err.contains(&format!("(at `{field}`)")), "{text}: {err}");
            for word in RUST_WORDS {
                assert!(!err.contains(word), "{text}: `{word}` in {err}");
            }
        }
        let toml_cases = [
            ("fs = 3", "fs"),
            ("limits = 3", "limits"),
            ("constraints = []", "constraints"),
            ("[limits]\ntimeout_ms = -1", "limits.timeout_ms"),
            (
                "[limits]\ntimeout_ms = 99999999999999999999",
                "limits.timeout_ms",
            ),
            (
                "[constraints]\nmax_invocations = 99999999999",
                "constraints.max_invocations",
            ),
            ("risk = 1", "risk"),
        ];
        for (text, field) in toml_cases {
            let err = ToolPolicy::from_toml_str("p.toml", text)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("p.toml:"), "{err}");
            assert!(err.contains(&format!("(at `{field}`)")), "{text}: {err}");
            for word in RUST_WORDS {
                assert!(!err.contains(word), "{text}: `{word}` in {err}");
            }
        }
        // A single-tool JSON policy written as an array is not an empty policy.
        assert!(ToolPolicy::from_json_str("p.json", "[]").is_err());
    }

    /// Issue 18 item 20: a manifest that is not an object is not told to regenerate itself.
    #[test]
    fn help_fits_the_problem() {
        let err = Manifest::from_json_str("m.json", "[]").unwrap_err();
        let help = err.0.help.clone().unwrap();
        assert!(!help.contains("regenerate"), "{help}");
        assert!(help.contains("\"manifest_version\": 1"), "{help}");
        let err = Manifest::from_json_str("m.json", r#"{"manifest_version": 9, "tools": {}}"#)
            .unwrap_err();
        assert!(err.0.help.clone().unwrap().contains("regenerate"));
    }
}
