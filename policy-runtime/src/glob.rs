//! The one glob dialect shared by the gate, the verifier and the sandbox.
//!
//! A glob is an absolute POSIX path pattern ([the glob dialect](crate::reference::globs)):
//!
//! * `*` matches any run of characters inside one component, `?` one character other than `/`;
//! * `[abc]`, `[a-z]` and `[!a]` are classes; a class never matches `/`;
//! * `{a,b}` is alternation inside one component;
//! * `**` as a whole component matches zero or more components, so `dir/**` matches `dir` itself;
//! * `\` escapes the next character (never `/`: a component cannot contain one).
//!
//! Globs are validated when they are built: relative globs, empty, `.` and `..` components
//! (also when spelled through escapes or any alternative of a brace list), an escaped `/`, NUL
//! and globs longer than [`MAX_GLOB_LEN`] bytes are rejected with an error that says where.
//!
//! Matching has no size limit: a single glob is matched by a position-set simulation of its
//! parsed form (cost bounded by glob length × path length); a [`GlobList`] is one automaton when
//! it is small, and a literal-prefix index of per-glob matchers when it is large (a policy of
//! thousands of `/srv/agent/project-N/**` globs is matched in a handful of lookups).
//!
//! # Example
//!
//! ```
//! use policy_runtime::glob::Glob;
//!
//! let glob = Glob::new("/data/**/*.csv")?;
//! assert!(glob.is_match("/data/2024/jan.csv"));
//! assert!(glob.is_match("/data/jan.csv"));
//! assert!(!glob.is_match("/data/jan.json"));
//! assert_eq!(glob.literal_dir().to_str(), Some("/data"));
//! assert!(!glob.is_tree());
//! # Ok::<(), policy_runtime::glob::GlobError>(())
//! ```

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::meta::Regex;
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::Anchored;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod index;
mod intern;
mod matcher;
mod relation;
mod residual;

/// Every path below the root of up to `depth` components over `names` (`/a`, `/a/b`, ...),
/// shortest first: the sample the glob modules' tests check their answers on.
#[cfg(test)]
fn sample_paths(names: &[&str], depth: usize) -> Vec<String> {
    let mut paths = Vec::new();
    let mut level = vec![String::new()];
    for _ in 0..depth {
        level = level
            .iter()
            .flat_map(|p| names.iter().map(move |x| format!("{p}/{x}")))
            .collect();
        paths.extend(level.iter().cloned());
    }
    paths
}

use index::PrefixIndex;

/// The longest glob accepted, in bytes. A path longer than `PATH_MAX` (4096 on Linux) cannot be
/// opened, so no useful glob needs more; the limit keeps every consumer's work on one glob
/// (matching, the verifier's automata, the sandbox's translation) small.
pub const MAX_GLOB_LEN: usize = 4096;

/// Why a glob was rejected, with the byte offset where the problem starts.
///
/// ```
/// use policy_runtime::glob::{Glob, GlobErrorKind};
///
/// let err = Glob::new("/out/../etc").unwrap_err();
/// assert_eq!(err.kind(), &GlobErrorKind::DotComponent);
/// assert_eq!(err.offset(), 5);
/// assert!(err.to_string().contains("`..`"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobError {
    glob: String,
    offset: usize,
    kind: GlobErrorKind,
}

/// The kinds of [`GlobError`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GlobErrorKind {
    /// The glob does not start with `/`.
    NotAbsolute,
    /// The glob contains a NUL byte.
    Nul,
    /// An empty component: `//` or a trailing `/`.
    EmptyComponent,
    /// A `.` or `..` component (which could escape the intended tree).
    DotComponent,
    /// `**` used as part of a component instead of a whole component.
    PartialRecursive,
    /// A `[` without its closing `]`.
    UnclosedClass,
    /// `[]` or `[!]`.
    EmptyClass,
    /// A range such as `[z-a]` whose end comes before its start.
    InvalidRange(char, char),
    /// A class that could match `/`, which would cross components.
    SlashInClass,
    /// A `{` without its closing `}`.
    UnclosedAlternation,
    /// A `}` without an opening `{`.
    UnopenedAlternation,
    /// `{` inside `{...}`.
    NestedAlternation,
    /// `/` inside `{...}`.
    SlashInAlternation,
    /// A `\` at the very end.
    DanglingEscape,
    /// `\/`: a component cannot contain `/`, so an escaped one could only hide a `..`.
    EscapedSlash,
    /// The glob is longer than [`MAX_GLOB_LEN`] bytes.
    TooLong(usize),
}

impl GlobError {
    /// The glob text that was rejected.
    pub fn glob(&self) -> &str {
        &self.glob
    }

    /// The byte offset in [`GlobError::glob`] where the problem starts.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// What is wrong.
    pub fn kind(&self) -> &GlobErrorKind {
        &self.kind
    }

    /// A short hint saying what to write instead.
    pub fn help(&self) -> &'static str {
        match self.kind {
            GlobErrorKind::NotAbsolute => "globs are absolute paths: start it with `/`",
            GlobErrorKind::Nul => "remove the NUL byte",
            GlobErrorKind::EmptyComponent => "remove the doubled or trailing `/`",
            GlobErrorKind::DotComponent => {
                "write the normalized path: `..` and `.` are never allowed in a glob"
            }
            GlobErrorKind::PartialRecursive => {
                "use `**` as a whole component (`/a/**/b`), or `*` inside a component"
            }
            GlobErrorKind::UnclosedClass => "close the class with `]`, or escape the `[` as `\\[`",
            GlobErrorKind::EmptyClass => "a class needs at least one character, e.g. `[ab]`",
            GlobErrorKind::InvalidRange(..) => "write the range low to high, e.g. `[a-z]`",
            GlobErrorKind::SlashInClass => "a class cannot match `/`; split the glob instead",
            GlobErrorKind::UnclosedAlternation => {
                "close the alternation with `}`, or escape the `{` as `\\{`"
            }
            GlobErrorKind::UnopenedAlternation => "escape the `}` as `\\}`",
            GlobErrorKind::NestedAlternation => "flatten the alternation: `{a,b,c}`",
            GlobErrorKind::SlashInAlternation => {
                "alternation stays inside one component: write two globs instead"
            }
            GlobErrorKind::DanglingEscape => "remove the trailing `\\`, or write `\\\\`",
            GlobErrorKind::EscapedSlash => {
                "a path component cannot contain `/`: remove the `\\` (and any `..` after it)"
            }
            GlobErrorKind::TooLong(_) => {
                "split it into shorter globs, or use a wildcard: globs are at most 4096 bytes"
            }
        }
    }
}

impl fmt::Display for GlobErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GlobErrorKind::NotAbsolute => write!(f, "the glob is not an absolute path"),
            GlobErrorKind::Nul => write!(f, "the glob contains a NUL byte"),
            GlobErrorKind::EmptyComponent => write!(f, "empty path component"),
            GlobErrorKind::DotComponent => write!(f, "`.` and `..` components are not allowed"),
            GlobErrorKind::PartialRecursive => {
                write!(f, "`**` must be a whole path component")
            }
            GlobErrorKind::UnclosedClass => write!(f, "unclosed character class"),
            GlobErrorKind::EmptyClass => write!(f, "empty character class"),
            GlobErrorKind::InvalidRange(a, b) => write!(f, "invalid range `{a}-{b}`"),
            GlobErrorKind::SlashInClass => write!(f, "a character class may not contain `/`"),
            GlobErrorKind::UnclosedAlternation => write!(f, "unclosed alternation"),
            GlobErrorKind::UnopenedAlternation => write!(f, "`}}` without `{{`"),
            GlobErrorKind::NestedAlternation => write!(f, "nested alternation"),
            GlobErrorKind::SlashInAlternation => write!(f, "`/` inside an alternation"),
            GlobErrorKind::DanglingEscape => write!(f, "dangling `\\` at the end"),
            GlobErrorKind::EscapedSlash => write!(f, "escaped `/` inside a component"),
            GlobErrorKind::TooLong(len) => write!(
                f,
                "the glob is {len} bytes long, more than the limit of {MAX_GLOB_LEN}"
            ),
        }
    }
}

impl fmt::Display for GlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid glob `{}`: {} at byte {}",
            self.glob, self.kind, self.offset
        )
    }
}

impl std::error::Error for GlobError {}

/// One element of a parsed component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    /// A literal character (escapes already removed).
    Literal(char),
    /// `*`: any run of characters inside the component.
    Star,
    /// `?`: one character.
    Question,
    /// A class: `negated` and inclusive ranges (a single character is a one-element range).
    Class {
        /// `[!...]`.
        negated: bool,
        /// Inclusive character ranges.
        ranges: Vec<(char, char)>,
    },
    /// `{a,b}`: alternatives, each a sequence of tokens without `/`.
    Alternation(Vec<Vec<Token>>),
}

/// One component of a parsed glob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Component {
    /// `**`: zero or more components.
    Recursive,
    /// A sequence of tokens matching exactly one component.
    Pattern(Vec<Token>),
}

impl Component {
    /// The literal text of this component when it contains no wildcard.
    pub fn as_literal(&self) -> Option<String> {
        match self {
            Component::Recursive => None,
            Component::Pattern(tokens) => tokens
                .iter()
                .map(|t| match t {
                    Token::Literal(c) => Some(*c),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// A validated glob of the shared dialect.
///
/// Two globs compare equal when their text is equal; use the verifier for language inclusion.
///
/// Globs are interned: every glob of the same text shares one parsed form, so cloning one is a
/// reference count and a manifest that repeats a glob holds it once.
#[derive(Clone)]
pub struct Glob {
    inner: Arc<GlobInner>,
}

#[derive(Debug)]
struct GlobInner {
    text: Box<str>,
    components: Vec<Component>,
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Glob")
            .field("text", &self.inner.text)
            .field("components", &self.inner.components)
            .finish()
    }
}

impl PartialEq for Glob {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) || self.inner.text == other.inner.text
    }
}

impl Eq for Glob {}

impl std::hash::Hash for Glob {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.text.hash(state)
    }
}

impl PartialOrd for Glob {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Glob {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.inner.text.cmp(&other.inner.text)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.inner.text)
    }
}

impl Glob {
    /// Parses and validates a glob.
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    ///
    /// assert!(Glob::new("/out/**").is_ok());
    /// assert!(Glob::new("out/**").is_err());
    /// assert!(Glob::new("/out//x").is_err());
    /// assert!(Glob::new("/out/a**").is_err());
    /// ```
    pub fn new(text: &str) -> Result<Glob, GlobError> {
        intern::glob(text)
    }

    /// The text the glob was built from.
    pub fn as_str(&self) -> &str {
        &self.inner.text
    }

    /// The parsed components, for consumers that translate the glob (the verifier).
    pub fn components(&self) -> &[Component] {
        &self.inner.components
    }

    /// Whether a normalized absolute path matches.
    ///
    /// The path must already be normalized (see [`crate::path::normalize`]); `/` is matched by
    /// globs made only of `**` components.
    pub fn is_match(&self, path: &str) -> bool {
        matcher::is_match(&self.inner.components, path)
    }

    /// Whether the glob matches the root directory `/` (all its components are `**`).
    pub fn matches_root(&self) -> bool {
        self.inner
            .components
            .iter()
            .all(|c| matches!(c, Component::Recursive))
    }

    /// The leading components that are fully literal, joined as a path (`/` when none are).
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// assert_eq!(Glob::new("/a/b/*.rs")?.literal_prefix().to_str(), Some("/a/b"));
    /// assert_eq!(Glob::new("/a/b/c")?.literal_prefix().to_str(), Some("/a/b/c"));
    /// # Ok::<(), policy_runtime::glob::GlobError>(())
    /// ```
    pub fn literal_prefix(&self) -> PathBuf {
        let mut path = PathBuf::from("/");
        for c in &self.inner.components {
            match c.as_literal() {
                Some(lit) => path.push(lit),
                None => break,
            }
        }
        path
    }

    /// Whether the glob is exactly `prefix/**` with a literal prefix: a whole directory tree,
    /// which Landlock and bind mounts enforce exactly.
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// assert!(Glob::new("/out/**")?.is_tree());
    /// assert!(!Glob::new("/out/*")?.is_tree());
    /// assert!(!Glob::new("/out/**/x")?.is_tree());
    /// # Ok::<(), policy_runtime::glob::GlobError>(())
    /// ```
    pub fn is_tree(&self) -> bool {
        match self.inner.components.split_last() {
            Some((Component::Recursive, rest)) => rest.iter().all(|c| c.as_literal().is_some()),
            _ => false,
        }
    }

    /// The directory tree an OS sandbox enforces for this glob: the glob's own tree when
    /// [`Glob::is_tree`], otherwise its longest literal *directory* prefix (the final component
    /// is never taken as a directory), which is wider than the glob.
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// assert_eq!(Glob::new("/out/**")?.literal_dir().to_str(), Some("/out"));
    /// assert_eq!(Glob::new("/data/*.csv")?.literal_dir().to_str(), Some("/data"));
    /// assert_eq!(Glob::new("/etc/hosts")?.literal_dir().to_str(), Some("/etc"));
    /// # Ok::<(), policy_runtime::glob::GlobError>(())
    /// ```
    pub fn literal_dir(&self) -> PathBuf {
        let take = if self.is_tree() {
            self.inner.components.len() - 1
        } else {
            let literal = self
                .inner
                .components
                .iter()
                .take_while(|c| c.as_literal().is_some())
                .count();
            literal.min(self.inner.components.len().saturating_sub(1))
        };
        let mut path = PathBuf::from("/");
        for c in &self.inner.components[..take] {
            path.push(c.as_literal().expect("counted literal components"));
        }
        path
    }

    /// A regular expression (regex-syntax dialect, anchored) for the language of this glob.
    ///
    /// The root directory `/` is represented by the empty string, so the languages of
    /// different globs can be compared by automata without special cases.
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// assert_eq!(Glob::new("/a/**")?.to_regex(), r"^/a(?:/[^/]+)*$");
    /// # Ok::<(), policy_runtime::glob::GlobError>(())
    /// ```
    pub fn to_regex(&self) -> String {
        regex_of(&self.inner.components)
    }
}

/// The matcher's view of a path: the root `/` is the empty string (see [`Glob::to_regex`]).
fn root_as_empty(path: &str) -> &str {
    if path == "/" {
        ""
    } else {
        path
    }
}

/// Compiles anchored glob regexes into one automaton. Unicode mode, so `?` and classes match one
/// character, not one byte (globset is byte-oriented there, which disagrees with the dialect).
/// `None` when the automaton would exceed regex-automata's size limits (long globs of many
/// Unicode classes do): the caller then matches glob by glob, which has no such limit.
fn compile(regexes: &[String]) -> Option<Regex> {
    Regex::builder()
        .configure(Regex::config().match_kind(regex_automata::MatchKind::All))
        .build_many(regexes)
        .ok()
}

fn regex_of(components: &[Component]) -> String {
    {
        let mut re = String::from("^");
        for c in components {
            match c {
                Component::Recursive => re.push_str("(?:/[^/]+)*"),
                Component::Pattern(tokens) => {
                    re.push('/');
                    tokens_regex(tokens, &mut re);
                }
            }
        }
        re.push('$');
        re
    }
}

fn tokens_regex(tokens: &[Token], re: &mut String) {
    for t in tokens {
        match t {
            Token::Literal(c) => re.push_str(&regex_syntax::escape(&c.to_string())),
            Token::Star => re.push_str("[^/]*"),
            Token::Question => re.push_str("[^/]"),
            Token::Class { negated, ranges } => {
                re.push('[');
                if *negated {
                    re.push('^');
                    re.push('/');
                }
                for (lo, hi) in ranges {
                    push_class_char(*lo, re);
                    if lo != hi {
                        re.push('-');
                        push_class_char(*hi, re);
                    }
                }
                re.push(']');
            }
            Token::Alternation(alts) => {
                re.push_str("(?:");
                for (i, alt) in alts.iter().enumerate() {
                    if i > 0 {
                        re.push('|');
                    }
                    tokens_regex(alt, re);
                }
                re.push(')');
            }
        }
    }
}

fn push_class_char(c: char, re: &mut String) {
    if c.is_ascii_alphanumeric() {
        re.push(c);
    } else {
        re.push_str(&format!("\\x{{{:x}}}", c as u32));
    }
}

fn parse(text: &str) -> Result<Vec<Component>, GlobError> {
    let err = |offset: usize, kind: GlobErrorKind| GlobError {
        glob: text.to_string(),
        offset,
        kind,
    };
    if text.len() > MAX_GLOB_LEN {
        return Err(err(MAX_GLOB_LEN, GlobErrorKind::TooLong(text.len())));
    }
    if let Some(pos) = text.find('\0') {
        return Err(err(pos, GlobErrorKind::Nul));
    }
    if !text.starts_with('/') {
        return Err(err(0, GlobErrorKind::NotAbsolute));
    }
    let mut parser = Parser {
        chars: text.char_indices().peekable(),
        text,
    };
    parser.chars.next(); // the leading '/'
    let mut components = Vec::new();
    loop {
        let start = parser.offset();
        let tokens = parser.component(false).map_err(|(o, k)| err(o, k))?;
        let end = parser.offset();
        let raw = &text[start..end];
        if tokens.is_empty() {
            return Err(err(start, GlobErrorKind::EmptyComponent));
        }
        if raw == "**" {
            components.push(Component::Recursive);
        } else if let Some(pos) = raw.find("**") {
            if !raw[..pos].ends_with('\\') {
                return Err(err(start + pos, GlobErrorKind::PartialRecursive));
            }
            components.push(Component::Pattern(tokens));
        } else {
            if can_be_dot(&tokens) {
                return Err(err(start, GlobErrorKind::DotComponent));
            }
            components.push(Component::Pattern(tokens));
        }
        match parser.chars.next() {
            Some((_, '/')) => continue,
            None => break,
            Some((o, c)) => unreachable!("component stopped at {c:?} ({o})"),
        }
    }
    Ok(components)
}

/// Whether a component can spell `.` or `..` with literals and alternatives alone.
///
/// Every alternative is followed, however many there are and wherever the dot one stands.
/// Wildcards are not followed: they only ever meet normalized paths, which have no dot
/// components.
fn can_be_dot(tokens: &[Token]) -> bool {
    [".", ".."].iter().any(|dot| spells(tokens, dot))
}

/// Whether the literal and alternation tokens can spell exactly `word`, tracking the set of
/// prefix lengths of `word` reachable so far (so the cost is linear in the tokens).
fn spells(tokens: &[Token], word: &str) -> bool {
    fn step(tokens: &[Token], word: &[u8], from: Vec<usize>) -> Vec<usize> {
        let mut at = from;
        for token in tokens {
            let mut next: Vec<usize> = Vec::new();
            match token {
                Token::Literal(c) => {
                    for &i in &at {
                        let mut buf = [0u8; 4];
                        let bytes = c.encode_utf8(&mut buf).as_bytes();
                        if word[i..].starts_with(bytes) {
                            next.push(i + bytes.len());
                        }
                    }
                }
                Token::Alternation(alts) => {
                    for alt in alts {
                        next.extend(step(alt, word, at.clone()));
                    }
                }
                _ => {}
            }
            next.sort_unstable();
            next.dedup();
            if next.is_empty() {
                return next;
            }
            at = next;
        }
        at
    }
    step(tokens, word.as_bytes(), vec![0]).contains(&word.len())
}

struct Parser<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    text: &'a str,
}

type ParseError = (usize, GlobErrorKind);

impl Parser<'_> {
    fn offset(&mut self) -> usize {
        self.chars.peek().map_or(self.text.len(), |(o, _)| *o)
    }

    /// Tokens up to (not including) the next `/`, end, or — inside an alternation — `,`/`}`.
    fn component(&mut self, in_alt: bool) -> Result<Vec<Token>, ParseError> {
        let mut tokens = Vec::new();
        while let Some(&(offset, c)) = self.chars.peek() {
            match c {
                '/' if in_alt => return Err((offset, GlobErrorKind::SlashInAlternation)),
                '/' => break,
                ',' | '}' if in_alt => break,
                '}' => return Err((offset, GlobErrorKind::UnopenedAlternation)),
                _ => {}
            }
            self.chars.next();
            tokens.push(match c {
                '*' => Token::Star,
                '?' => Token::Question,
                '\\' => match self.chars.next() {
                    Some((_, '/')) => return Err((offset, GlobErrorKind::EscapedSlash)),
                    Some((_, escaped)) => Token::Literal(escaped),
                    None => return Err((offset, GlobErrorKind::DanglingEscape)),
                },
                '[' => self.class(offset)?,
                '{' if in_alt => return Err((offset, GlobErrorKind::NestedAlternation)),
                '{' => self.alternation(offset)?,
                c => Token::Literal(c),
            });
        }
        Ok(tokens)
    }

    fn alternation(&mut self, open: usize) -> Result<Token, ParseError> {
        let mut alts = Vec::new();
        loop {
            alts.push(self.component(true)?);
            match self.chars.next() {
                Some((_, ',')) => continue,
                Some((_, '}')) => return Ok(Token::Alternation(alts)),
                _ => return Err((open, GlobErrorKind::UnclosedAlternation)),
            }
        }
    }

    fn class(&mut self, open: usize) -> Result<Token, ParseError> {
        let negated = matches!(self.chars.peek(), Some((_, '!')));
        if negated {
            self.chars.next();
        }
        let mut ranges = Vec::new();
        loop {
            let (offset, c) = self
                .chars
                .next()
                .ok_or((open, GlobErrorKind::UnclosedClass))?;
            let lo = match c {
                ']' if ranges.is_empty() => return Err((open, GlobErrorKind::EmptyClass)),
                ']' => return Ok(Token::Class { negated, ranges }),
                '/' => return Err((offset, GlobErrorKind::SlashInClass)),
                '\\' => {
                    self.chars
                        .next()
                        .ok_or((offset, GlobErrorKind::DanglingEscape))?
                        .1
                }
                c => c,
            };
            let mut hi = lo;
            if matches!(self.chars.peek(), Some((_, '-'))) {
                let mut ahead = self.chars.clone();
                ahead.next();
                if let Some(&(o, end)) = ahead.peek() {
                    if end != ']' {
                        self.chars.next();
                        self.chars.next();
                        hi = if end == '\\' {
                            self.chars
                                .next()
                                .ok_or((o, GlobErrorKind::DanglingEscape))?
                                .1
                        } else {
                            end
                        };
                        if hi < lo {
                            return Err((offset, GlobErrorKind::InvalidRange(lo, hi)));
                        }
                    }
                }
            }
            if lo <= '/' && '/' <= hi && !negated {
                return Err((offset, GlobErrorKind::SlashInClass));
            }
            ranges.push((lo, hi));
        }
    }
}

/// An ordered list of globs, compiled once into a set.
///
/// It serializes as a JSON array of strings. Equality compares the texts in order.
///
/// ```
/// use policy_runtime::glob::GlobList;
///
/// let list = GlobList::new(["/out/**", "/tmp/*.log"])?;
/// assert!(list.is_match("/out/a/b"));
/// assert!(list.is_match("/tmp/x.log"));
/// assert!(!list.is_match("/tmp/x/y.log"));
/// assert!(!GlobList::empty().is_match("/out"));
/// # Ok::<(), policy_runtime::glob::GlobError>(())
/// ```
#[derive(Clone, Debug)]
pub struct GlobList {
    globs: Vec<Glob>,
    set: OnceLock<ListMatcher>,
}

/// How a list is matched. A small list is one automaton (the fastest for the gate's common
/// case of a few globs): a fully built DFA, walked one table lookup per byte, when it stays
/// under [`DFA_SIZE_LIMIT`], else regex-automata's lazy one. A list of more than
/// [`AUTOMATON_MAX_GLOBS`] globs, or one whose automaton would exceed regex-automata's size
/// limits, is matched glob by glob through an index of literal prefixes, whose cost grows with
/// the depth of the path, not with the number of globs.
#[derive(Clone, Debug)]
enum ListMatcher {
    Dfa(Box<ListDfa>),
    Automaton(Box<Regex>),
    Indexed(PrefixIndex),
}

/// A list's globs as one anchored DFA, and its start state (the same for every path: the globs
/// look at nothing before the path).
///
/// The bytes every match must begin with (most lists share a root, `/srv/agent/`) are
/// compared as one slice, and the walk resumes in the state they lead to: a path spends its
/// table lookups only where the globs differ.
#[derive(Clone, Debug)]
struct ListDfa {
    dfa: dense::DFA<Vec<u32>>,
    /// The bytes that begin every match (see [`forced_prefix`]).
    prefix: Box<[u8]>,
    /// The state after `prefix`.
    after_prefix: StateID,
}

impl ListDfa {
    /// `None` when the DFA would exceed [`DFA_SIZE_LIMIT`] (globs whose wildcards interleave
    /// can blow up determinization).
    fn build(regexes: &[String]) -> Option<ListDfa> {
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(StartKind::Anchored)
                    .match_kind(regex_automata::MatchKind::All)
                    .dfa_size_limit(Some(DFA_SIZE_LIMIT))
                    .determinize_size_limit(Some(DFA_SIZE_LIMIT)),
            )
            .build_many(regexes)
            .ok()?;
        let start = dfa
            .start_state(&start::Config::new().anchored(Anchored::Yes))
            .ok()?;
        let (prefix, after_prefix) = forced_prefix(&dfa, start);
        Some(ListDfa {
            dfa,
            prefix: prefix.into_boxed_slice(),
            after_prefix,
        })
    }

    fn is_match(&self, text: &str) -> bool {
        // Exact, not a heuristic: along the prefix every other byte, and the end of the text,
        // lead to no match (see `forced_prefix`).
        let Some(rest) = text.as_bytes().strip_prefix(&*self.prefix) else {
            return false;
        };
        let mut state = self.after_prefix;
        for &b in rest {
            state = self.dfa.next_state(state, b);
            if self.dfa.is_dead_state(state) {
                return false;
            }
        }
        self.dfa.is_match_state(self.dfa.next_eoi_state(state))
    }
}

/// The longest byte string every match of `dfa` begins with, read off the automaton itself:
/// from `start`, follow the transitions while exactly one byte leads anywhere but the dead
/// state and the text may not end there. Returns it and the state it leads to.
///
/// So a text that does not begin with the prefix cannot match: it either takes a byte into the
/// dead state or ends where ending does not match. Stopping at any special state (a match
/// state, which the DFA reports one byte late) leaves those to the general walk.
fn forced_prefix(dfa: &dense::DFA<Vec<u32>>, start: StateID) -> (Vec<u8>, StateID) {
    const MAX: usize = 256;
    let (mut prefix, mut state) = (Vec::new(), start);
    while prefix.len() < MAX && !dfa.is_match_state(dfa.next_eoi_state(state)) {
        let mut live = (0..=u8::MAX)
            .map(|b| (b, dfa.next_state(state, b)))
            .filter(|&(_, next)| !dfa.is_dead_state(next));
        let (Some((byte, next)), None) = (live.next(), live.next()) else {
            break;
        };
        if dfa.is_special_state(next) {
            break;
        }
        prefix.push(byte);
        state = next;
    }
    (prefix, state)
}

/// The most memory one list's DFA may take (it is built once per list, on first use).
const DFA_SIZE_LIMIT: usize = 1 << 20;

/// Lists up to this many globs, and this many bytes of regex, are compiled into one automaton
/// (when it fits): beyond that, compiling costs more than the index saves.
const AUTOMATON_MAX_GLOBS: usize = 32;
const AUTOMATON_MAX_REGEX_BYTES: usize = 8 << 10;

impl PartialEq for GlobList {
    fn eq(&self, other: &Self) -> bool {
        self.globs == other.globs
    }
}

impl Eq for GlobList {}

impl Default for GlobList {
    fn default() -> Self {
        GlobList::empty()
    }
}

impl GlobList {
    /// The empty list: matches nothing.
    pub fn empty() -> GlobList {
        GlobList::from_globs(Vec::new())
    }

    /// Parses every glob; the first invalid one is the error.
    pub fn new<I, S>(globs: I) -> Result<GlobList, GlobError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let globs = globs
            .into_iter()
            .map(|g| Glob::new(g.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(GlobList::from_globs(globs))
    }

    /// Builds the set from already validated globs.
    pub fn from_globs(globs: Vec<Glob>) -> GlobList {
        GlobList {
            globs,
            set: OnceLock::new(),
        }
    }

    /// The globs, in declaration order.
    pub fn globs(&self) -> &[Glob] {
        &self.globs
    }

    /// Whether the list is `[]`.
    pub fn is_empty(&self) -> bool {
        self.globs.is_empty()
    }

    /// Whether any glob matches the normalized absolute path.
    pub fn is_match(&self, path: &str) -> bool {
        match self.matcher() {
            ListMatcher::Dfa(dfa) => dfa.is_match(root_as_empty(path)),
            ListMatcher::Automaton(regex) => regex.is_match(root_as_empty(path)),
            ListMatcher::Indexed(index) => index.first_match(&self.globs, path).is_some(),
        }
    }

    /// The first glob (in declaration order) that matches, for explanations.
    pub fn first_match(&self, path: &str) -> Option<&Glob> {
        match self.matcher() {
            ListMatcher::Dfa(_) | ListMatcher::Automaton(_) => {
                self.globs.iter().find(|g| g.is_match(path))
            }
            ListMatcher::Indexed(index) => index.first_match(&self.globs, path),
        }
    }

    fn matcher(&self) -> &ListMatcher {
        self.set.get_or_init(|| {
            if self.globs.len() <= AUTOMATON_MAX_GLOBS {
                let regexes: Vec<String> = self.globs.iter().map(Glob::to_regex).collect();
                let regex_bytes: usize = regexes.iter().map(String::len).sum();
                if regex_bytes > AUTOMATON_MAX_REGEX_BYTES {
                    return ListMatcher::Indexed(PrefixIndex::new(&self.globs));
                }
                if let Some(dfa) = ListDfa::build(&regexes) {
                    return ListMatcher::Dfa(Box::new(dfa));
                }
                if let Some(regex) = compile(&regexes) {
                    return ListMatcher::Automaton(Box::new(regex));
                }
            }
            ListMatcher::Indexed(PrefixIndex::new(&self.globs))
        })
    }
}

impl Serialize for GlobList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.globs.iter().map(Glob::as_str))
    }
}

impl<'de> Deserialize<'de> for GlobList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Globs;
        impl<'de> serde::de::Visitor<'de> for Globs {
            type Value = Result<Vec<Glob>, GlobError>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut globs = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                // Every element must still be a string; the first invalid glob is the error,
                // reported once the list is read (where a list of texts would report it).
                let mut first_error = None;
                while let Some(ParsedGlob(parsed)) = seq.next_element()? {
                    match parsed {
                        Ok(glob) => globs.push(glob),
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
                Ok(first_error.map_or(Ok(globs), Err))
            }
        }
        let globs = d.deserialize_seq(Globs)?;
        globs
            .map(GlobList::from_globs)
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for Glob {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A glob read from a string in place (no copy of the text unless it is new to the interner).
struct ParsedGlob(Result<Glob, GlobError>);

impl<'de> Deserialize<'de> for ParsedGlob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = ParsedGlob;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<ParsedGlob, E> {
                Ok(ParsedGlob(Glob::new(text)))
            }
        }
        d.deserialize_str(Text)
    }
}

impl<'de> Deserialize<'de> for Glob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let ParsedGlob(parsed) = ParsedGlob::deserialize(d)?;
        parsed.map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(glob: &str) -> GlobErrorKind {
        Glob::new(glob).unwrap_err().kind
    }

    #[test]
    fn rejects_bad_globs() {
        assert_eq!(kind("out"), GlobErrorKind::NotAbsolute);
        assert_eq!(kind(""), GlobErrorKind::NotAbsolute);
        assert_eq!(kind("/a\0b"), GlobErrorKind::Nul);
        assert_eq!(kind("/"), GlobErrorKind::EmptyComponent);
        assert_eq!(kind("/a//b"), GlobErrorKind::EmptyComponent);
        assert_eq!(kind("/a/"), GlobErrorKind::EmptyComponent);
        assert_eq!(kind("/a/./b"), GlobErrorKind::DotComponent);
        assert_eq!(kind("/a/.."), GlobErrorKind::DotComponent);
        assert_eq!(kind("/a/{..,b}"), GlobErrorKind::DotComponent);
        assert_eq!(kind("/a/\\.\\."), GlobErrorKind::DotComponent);
        assert_eq!(kind("/a/b**"), GlobErrorKind::PartialRecursive);
        assert_eq!(kind("/a/[ab"), GlobErrorKind::UnclosedClass);
        assert_eq!(kind("/a/[]"), GlobErrorKind::EmptyClass);
        assert_eq!(kind("/a/[z-a]"), GlobErrorKind::InvalidRange('z', 'a'));
        assert_eq!(kind("/a/[a/]"), GlobErrorKind::SlashInClass);
        assert_eq!(kind("/a/[+-0]"), GlobErrorKind::SlashInClass);
        assert_eq!(kind("/a/{b,c"), GlobErrorKind::UnclosedAlternation);
        assert_eq!(kind("/a/b}"), GlobErrorKind::UnopenedAlternation);
        assert_eq!(kind("/a/{b,{c,d}}"), GlobErrorKind::NestedAlternation);
        assert_eq!(kind("/a/{b,c/d}"), GlobErrorKind::SlashInAlternation);
        assert_eq!(kind("/a/b\\"), GlobErrorKind::DanglingEscape);
    }

    /// Issue 18 item 13: an escaped `/` hid a `..` (`/tmp\/../etc/**` was accepted and matched
    /// nothing), and a `..` late in a long brace list was missed.
    #[test]
    fn escapes_and_late_alternatives_cannot_hide_dot_components() {
        assert_eq!(kind("/tmp\\/../etc/**"), GlobErrorKind::EscapedSlash);
        assert_eq!(kind("/tmp/a\\/b"), GlobErrorKind::EscapedSlash);
        let many: Vec<String> = (0..100).map(|i| format!("x{i}")).collect();
        let late = format!("/a/{{{},..}}/etc", many.join(","));
        assert_eq!(kind(&late), GlobErrorKind::DotComponent);
        let short: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        let late = format!("/a/{{{},.}}", short.join(","));
        assert_eq!(kind(&late), GlobErrorKind::DotComponent);
        assert_eq!(kind("/a/{x,.}{.,y}"), GlobErrorKind::DotComponent);
        assert_eq!(kind("/a/\\.{.,y}"), GlobErrorKind::DotComponent);
        // Spellings that are not dot components stay valid.
        assert!(Glob::new("/a/{..x,y.}").is_ok());
        assert!(Glob::new("/a/{.,y}z").is_ok());
        assert!(Glob::new("/a/.*").is_ok());
    }

    #[test]
    fn length_is_limited_with_a_clear_error() {
        let long = format!("/{}", "a".repeat(10 << 10));
        let err = Glob::new(&long).unwrap_err();
        assert_eq!(err.kind(), &GlobErrorKind::TooLong(long.len()));
        assert!(err.kind().to_string().contains("limit of 4096"), "{err}");
        assert!(Glob::new(&format!("/{}", "a".repeat(MAX_GLOB_LEN - 1))).is_ok());
    }

    #[test]
    fn offsets_point_at_the_problem() {
        let e = Glob::new("/a/b/c**").unwrap_err();
        assert_eq!(e.offset(), 6);
        let e = Glob::new("/ok/[abc").unwrap_err();
        assert_eq!(e.offset(), 4);
    }

    /// The list DFA skips the bytes every match begins with; the paths around the end of that
    /// prefix are where a mistake would show.
    #[test]
    fn a_list_dfa_compares_the_shared_prefix_exactly() {
        let lists: &[(&[&str], &str)] = &[
            (
                &["/srv/agent/data/**", "/srv/agent/out/*.md"],
                "/srv/agent/",
            ),
            (&["/srv/agent/**"], "/srv/agent"),
            (&["/a/b"], "/a/b"),
            (&["/**"], ""),
            (&["/x/**", "/y"], "/"),
            (&["/d/é?", "/d/éa"], "/d/é"),
        ];
        let paths = [
            "/",
            "/s",
            "/srv/agen",
            "/srv/agent",
            "/srv/agent/",
            "/srv/agentx/data/a",
            "/srv/agent/data",
            "/srv/agent/data/x",
            "/srv/agent/out/a.md",
            "/srv/agent/out/a/b.md",
            "/a",
            "/a/b",
            "/a/bc",
            "/a/b/c",
            "/x",
            "/y",
            "/y/z",
            "/d/é",
            "/d/éa",
            "/d/éü",
            "/d/e",
        ];
        for &(texts, prefix) in lists {
            let globs: Vec<Glob> = texts.iter().map(|t| Glob::new(t).unwrap()).collect();
            let regexes: Vec<String> = globs.iter().map(Glob::to_regex).collect();
            let dfa = ListDfa::build(&regexes).unwrap();
            assert_eq!(&*dfa.prefix, prefix.as_bytes(), "{texts:?}");
            for path in paths {
                let expected = globs.iter().any(|g| g.is_match(path));
                assert_eq!(
                    dfa.is_match(root_as_empty(path)),
                    expected,
                    "{texts:?} {path}"
                );
            }
        }
    }

    #[test]
    fn matching_follows_the_dialect() {
        let cases: &[(&str, &str, bool)] = &[
            ("/out/**", "/out", true),
            ("/out/**", "/out/a/b/c", true),
            ("/out/**", "/outside", false),
            ("/out/*", "/out/a", true),
            ("/out/*", "/out/a/b", false),
            ("/out/*", "/out", false),
            ("/a/**/b", "/a/b", true),
            ("/a/**/b", "/a/x/y/b", true),
            ("/a/**/b", "/a/x/y/bb", false),
            ("/**", "/", true),
            ("/**", "/anything/at/all", true),
            ("/**/x", "/x", true),
            ("/d/?.txt", "/d/a.txt", true),
            ("/d/?.txt", "/d/ab.txt", false),
            ("/d/[a-c]", "/d/b", true),
            ("/d/[a-c]", "/d/d", false),
            ("/d/[!a-c]", "/d/d", true),
            ("/d/[!a-c]", "/d/a", false),
            ("/d/{x,y}.rs", "/d/y.rs", true),
            ("/d/{x,y}.rs", "/d/z.rs", false),
            ("/d/\\*", "/d/*", true),
            ("/d/\\*", "/d/x", false),
            ("/D/x", "/d/x", false),
            ("/d/é?", "/d/éü", true),
            ("/d/[-a]", "/d/-", true),
            ("/d/a,b", "/d/a,b", true),
            ("/d/!x", "/d/!x", true),
        ];
        for (glob, path, want) in cases {
            let g = Glob::new(glob).unwrap();
            assert_eq!(g.is_match(path), *want, "{glob} vs {path}");
            let re = regex_syntax::parse(&g.to_regex()).is_ok();
            assert!(re, "regex of {glob} parses");
        }
    }

    #[test]
    fn prefixes_and_trees() {
        let g = Glob::new("/a/b/**").unwrap();
        assert!(g.is_tree());
        assert_eq!(g.literal_dir(), PathBuf::from("/a/b"));
        let g = Glob::new("/**").unwrap();
        assert!(g.is_tree());
        assert_eq!(g.literal_dir(), PathBuf::from("/"));
        let g = Glob::new("/a/*/c").unwrap();
        assert!(!g.is_tree());
        assert_eq!(g.literal_dir(), PathBuf::from("/a"));
        assert_eq!(g.literal_prefix(), PathBuf::from("/a"));
    }
}
