//! Where a key sits in manifest JSON text, for diagnostics and SARIF locations.
//!
//! The manifest has already been parsed by the time a finding is located, so this scanner only
//! has to walk valid JSON and remember the byte span of each object key, by key path.
//!
//! ```
//! use manifest_verify::locate::KeySpans;
//!
//! let text = "{\n  \"tools\": {\n    \"fetch\": {\n      \"net\": \"allow\"\n    }\n  }\n}";
//! let spans = KeySpans::scan(text, 4);
//! let span = spans.find(&["tools", "fetch", "net"]).unwrap();
//! assert_eq!(&text[span.clone()], "\"net\"");
//! assert_eq!(KeySpans::line_col(text, span.start), (4, 7));
//! // A missing key falls back to its nearest present ancestor.
//! let tool = spans.nearest(&["tools", "fetch", "exec"]).unwrap();
//! assert_eq!(&text[tool], "\"fetch\"");
//! ```

use std::collections::HashMap;
use std::ops::Range;

/// Byte spans of object keys (quotes included), by key path from the document root, with the
/// line and column of each, counted once during the scan (so locating many findings in a
/// large manifest stays linear).
#[derive(Clone, Debug, Default)]
pub struct KeySpans {
    spans: HashMap<Vec<String>, Range<usize>>,
    positions: HashMap<usize, (usize, usize)>,
}

impl KeySpans {
    /// Scans `text`, recording keys down to `depth` levels of objects.
    pub fn scan(text: &str, depth: usize) -> KeySpans {
        let bytes = text.as_bytes();
        let mut spans = HashMap::new();
        let mut positions = HashMap::new();
        let mut cursor = Cursor::default();
        // One frame per open container: `Some(key)` for objects (the key being read), `None`
        // for arrays.
        let mut stack: Vec<Option<Option<String>>> = Vec::new();
        let mut expect_key = false;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'{' => {
                    stack.push(Some(None));
                    expect_key = true;
                }
                b'[' => {
                    stack.push(None);
                    expect_key = false;
                }
                b'}' | b']' => {
                    stack.pop();
                    expect_key = false;
                }
                b',' => expect_key = matches!(stack.last(), Some(Some(_))),
                b'"' => {
                    let end = string_end(bytes, i);
                    if expect_key {
                        let key: String = serde_json::from_str(&text[i..end]).unwrap_or_default();
                        if let Some(Some(slot)) = stack.last_mut() {
                            *slot = Some(key);
                        }
                        if stack.len() <= depth {
                            let path: Vec<String> = stack
                                .iter()
                                .map(|f| f.clone().flatten().unwrap_or_default())
                                .collect();
                            spans.entry(path).or_insert(i..end);
                            positions.insert(i, cursor.advance_to(bytes, i));
                        }
                        expect_key = false;
                    }
                    i = end;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        KeySpans { spans, positions }
    }

    /// The 1-based line and column of a key span's start offset, as counted by the scan.
    pub fn position(&self, offset: usize) -> Option<(usize, usize)> {
        self.positions.get(&offset).copied()
    }

    /// The span of the key at `path`.
    pub fn find<S: AsRef<str>>(&self, path: &[S]) -> Option<Range<usize>> {
        let key: Vec<String> = path.iter().map(|s| s.as_ref().to_string()).collect();
        self.spans.get(&key).cloned()
    }

    /// The span of the key at `path`, or of its nearest ancestor that is present.
    pub fn nearest<S: AsRef<str>>(&self, path: &[S]) -> Option<Range<usize>> {
        (1..=path.len()).rev().find_map(|n| self.find(&path[..n]))
    }

    /// The 1-based line and column (in characters) of a byte offset.
    pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
        let before = &text[..offset.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }
}

/// Line and column (1-based, in characters) at a byte offset, advanced monotonically.
struct Cursor {
    offset: usize,
    line: usize,
    column: usize,
}

impl Default for Cursor {
    fn default() -> Cursor {
        Cursor {
            offset: 0,
            line: 1,
            column: 1,
        }
    }
}

impl Cursor {
    fn advance_to(&mut self, bytes: &[u8], offset: usize) -> (usize, usize) {
        for &b in &bytes[self.offset..offset.max(self.offset)] {
            if b == b'\n' {
                self.line += 1;
                self.column = 1;
            } else if b & 0xC0 != 0x80 {
                self.column += 1;
            }
        }
        self.offset = offset.max(self.offset);
        (self.line, self.column)
    }
}

/// The index just past the closing quote of the string starting at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_inside_arrays_and_strings_are_not_confused() {
        let text = r#"{"tools": {"a\"b": {"fs": {"read": ["{\"x\": 1}", "/y"]}, "net": "deny"}}}"#;
        let s = KeySpans::scan(text, 4);
        assert!(s.find(&["tools", "a\"b", "net"]).is_some());
        assert!(s.find(&["tools", "a\"b", "fs", "read"]).is_some());
        assert!(s.find(&["tools", "a\"b", "fs", "read", "x"]).is_none());
    }

    #[test]
    fn positions_match_line_col() {
        let text = "{\n  \"tools\": {\"é\": {\"net\": 1},\n \"b\": {}}}";
        let s = KeySpans::scan(text, 4);
        for path in [
            &["tools"][..],
            &["tools", "é"],
            &["tools", "é", "net"],
            &["tools", "b"],
        ] {
            let span = s.find(path).unwrap();
            assert_eq!(
                s.position(span.start),
                Some(KeySpans::line_col(text, span.start))
            );
        }
    }
}
