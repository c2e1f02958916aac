//! A command line as the classifier reads it: shell strings parsed by a POSIX/bash parser
//! (`brush-parser`) into simple commands joined by pipes, lists and groups, with every word
//! reduced to its literal text or refused.
//!
//! Nothing here guesses: a word whose value is only known when the shell runs (a variable, a
//! command substitution, arithmetic, brace expansion) makes the whole command unjudgeable.

use brush_parser::ast;
use brush_parser::word::{self, TildeExpr, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;

/// Longest shell string read; beyond it a command is not judged.
pub(crate) const MAX_SHELL_BYTES: usize = 64 * 1024;
/// Deepest nesting of parentheses and braces read (the parser recurses on them).
const MAX_NESTING: usize = 48;

/// One word of a command, after quote removal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Word {
    /// The literal text; a leading unquoted `~` is kept as `~`.
    pub text: String,
    /// Starts with an unquoted `~` (the home directory).
    pub tilde: bool,
    /// Has unquoted glob characters (`*`, `?`, `[`, extglob).
    pub glob: bool,
}

impl Word {
    pub(crate) fn literal(text: impl Into<String>) -> Word {
        Word {
            text: text.into(),
            tilde: false,
            glob: false,
        }
    }
}

/// How a redirection uses its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RedirectKind {
    /// `< file`.
    Read,
    /// `> file`, `>| file`, `&> file`: truncates.
    Truncate,
    /// `>> file`, `&>> file`.
    Append,
    /// `<> file`.
    ReadWrite,
}

/// A redirection to or from a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Redirect {
    pub kind: RedirectKind,
    pub target: Word,
}

/// A simple command: assignments, words, redirections.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Simple {
    /// `NAME=value` before the command.
    pub assignments: Vec<(String, Word)>,
    /// The program and its arguments.
    pub words: Vec<Word>,
    /// File redirections.
    pub redirects: Vec<Redirect>,
    /// Its standard input is a here-document or here-string.
    pub here_input: bool,
}

/// A command line's structure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// One command.
    Simple(Simple),
    /// `a | b | c`: each one's output is the next one's input.
    Pipeline(Vec<Node>),
    /// `a && b`, `a || b`, `a; b`, `a & b`, lines.
    List(Vec<Node>),
    /// `( ... )`: runs in a subshell (a `cd` inside stays inside).
    Subshell(Box<Node>),
    /// `{ ...; }`.
    Group(Box<Node>),
    /// A function that calls itself (`:(){ :|:& };:`).
    ForkBomb(String),
}

/// Why a command line cannot be judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unjudgeable(pub String);

fn unjudgeable<T>(why: impl Into<String>) -> Result<T, Unjudgeable> {
    Err(Unjudgeable(why.into()))
}

fn options() -> ParserOptions {
    ParserOptions {
        // `sh` and `bash` both run these strings; bash's extensions parse as bash does.
        enable_extended_globbing: true,
        ..ParserOptions::default()
    }
}

/// Parses a shell string (`sh -c STRING`).
pub(crate) fn parse(source: &str) -> Result<Node, Unjudgeable> {
    if source.len() > MAX_SHELL_BYTES {
        return unjudgeable(format!(
            "the command is longer than {MAX_SHELL_BYTES} bytes"
        ));
    }
    if source.contains('\0') {
        return unjudgeable("the command contains a NUL byte");
    }
    // The parser recurses on nesting; a crude over-count (quotes ignored) keeps its stack
    // bounded on any input.
    let mut depth = 0usize;
    for c in source.chars() {
        match c {
            '(' | '{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return unjudgeable(format!(
                        "the command nests more than {MAX_NESTING} parentheses or braces"
                    ));
                }
            }
            ')' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let options = options();
    let mut parser = brush_parser::Parser::new(std::io::Cursor::new(source), &options);
    let program = parser
        .parse_program()
        .map_err(|e| Unjudgeable(format!("it is not valid shell syntax ({e})")))?;
    let mut items = Vec::new();
    for complete in &program.complete_commands {
        items.push(compound_list(complete)?);
    }
    Ok(flatten(items).unwrap_or(Node::List(Vec::new())))
}

fn flatten(mut items: Vec<Node>) -> Option<Node> {
    match items.len() {
        0 => None,
        1 => items.pop(),
        _ => Some(Node::List(items)),
    }
}

fn compound_list(list: &ast::CompoundList) -> Result<Node, Unjudgeable> {
    let mut items = Vec::new();
    for ast::CompoundListItem(and_or, _separator) in &list.0 {
        items.push(pipeline(&and_or.first)?);
        for next in &and_or.additional {
            let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = next;
            items.push(pipeline(p)?);
        }
    }
    // An `&` separator runs its item in the background: still one of the list's items,
    // judged like the others.
    Ok(flatten(items).unwrap_or(Node::List(Vec::new())))
}

fn pipeline(p: &ast::Pipeline) -> Result<Node, Unjudgeable> {
    let mut seq = Vec::new();
    for c in &p.seq {
        seq.push(command(c)?);
    }
    Ok(if seq.len() == 1 {
        seq.remove(0)
    } else {
        Node::Pipeline(seq)
    })
}

fn command(c: &ast::Command) -> Result<Node, Unjudgeable> {
    match c {
        ast::Command::Simple(s) => simple(s).map(Node::Simple),
        ast::Command::Compound(compound, redirects) => {
            if redirects.as_ref().is_some_and(|r| !r.0.is_empty()) {
                return unjudgeable(
                    "a redirection of a whole group or subshell is not judged; redirect each command",
                );
            }
            match compound {
                ast::CompoundCommand::Subshell(s) => {
                    Ok(Node::Subshell(Box::new(compound_list(&s.list)?)))
                }
                ast::CompoundCommand::BraceGroup(g) => {
                    Ok(Node::Group(Box::new(compound_list(&g.list)?)))
                }
                ast::CompoundCommand::Arithmetic(_) | ast::CompoundCommand::ArithmeticForClause(_) => {
                    unjudgeable("arithmetic commands are not judged")
                }
                ast::CompoundCommand::Coprocess(_) => unjudgeable("`coproc` is not judged"),
                _ => unjudgeable(
                    "loops and conditionals (`for`, `while`, `until`, `if`, `case`) are not judged; write the commands out",
                ),
            }
        }
        ast::Command::Function(f) => {
            let name = f.fname.value.as_str();
            let body = f.body.0.to_string();
            if body
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '-'))
                .any(|w| w == name)
            {
                return Ok(Node::ForkBomb(name.to_string()));
            }
            unjudgeable(format!(
                "it defines a function `{name}`; function and alias definitions are not judged"
            ))
        }
        ast::Command::ExtendedTest(..) => {
            unjudgeable("`[[ ... ]]` tests are not judged; use `test`")
        }
    }
}

fn simple(s: &ast::SimpleCommand) -> Result<Simple, Unjudgeable> {
    let mut out = Simple::default();
    let items = s
        .prefix
        .iter()
        .flat_map(|p| p.0.iter())
        .map(Some)
        .chain(std::iter::once(None))
        .chain(s.suffix.iter().flat_map(|p| p.0.iter()).map(Some));
    for item in items {
        let Some(item) = item else {
            if let Some(w) = &s.word_or_name {
                let word = parse_word(&w.value)?;
                out.words.push(word);
            }
            continue;
        };
        match item {
            ast::CommandPrefixOrSuffixItem::Word(w) => out.words.push(parse_word(&w.value)?),
            // After the program, `name=value` is an ordinary argument (`dd of=x`, `curl -F a=@f`).
            ast::CommandPrefixOrSuffixItem::AssignmentWord(_, w) if !out.words.is_empty() => {
                out.words.push(parse_word(&w.value)?)
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(a, _) => {
                let name = match &a.name {
                    ast::AssignmentName::VariableName(n) => n.clone(),
                    ast::AssignmentName::ArrayElementName(n, _) => {
                        return unjudgeable(format!("array assignment `{n}[...]` is not judged"))
                    }
                };
                let value = match &a.value {
                    ast::AssignmentValue::Scalar(w) => parse_word(&w.value)?,
                    ast::AssignmentValue::Array(_) => {
                        return unjudgeable(format!(
                            "array assignment `{name}=(...)` is not judged"
                        ))
                    }
                };
                if a.append {
                    return unjudgeable(format!("`{name}+=` is not judged"));
                }
                out.assignments.push((name, value));
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(..) => return unjudgeable(
                "process substitution `<(...)` / `>(...)` runs a command whose output is not known",
            ),
            ast::CommandPrefixOrSuffixItem::IoRedirect(r) => redirect(r, &mut out)?,
        }
    }
    Ok(out)
}

fn redirect(r: &ast::IoRedirect, out: &mut Simple) -> Result<(), Unjudgeable> {
    match r {
        ast::IoRedirect::File(_, kind, target) => {
            let kind = match kind {
                ast::IoFileRedirectKind::Read => RedirectKind::Read,
                ast::IoFileRedirectKind::Write | ast::IoFileRedirectKind::Clobber => {
                    RedirectKind::Truncate
                }
                ast::IoFileRedirectKind::Append => RedirectKind::Append,
                ast::IoFileRedirectKind::ReadAndWrite => RedirectKind::ReadWrite,
                // `2>&1`, `<&3`: no file is named.
                ast::IoFileRedirectKind::DuplicateInput
                | ast::IoFileRedirectKind::DuplicateOutput => {
                    return match target {
                        ast::IoFileRedirectTarget::Fd(_) => Ok(()),
                        ast::IoFileRedirectTarget::Duplicate(w) => {
                            let w = parse_word(&w.value)?;
                            if w.text == "-" || w.text.chars().all(|c| c.is_ascii_digit()) {
                                Ok(())
                            } else {
                                // `>& file` is bash's `&> file`.
                                out.redirects.push(Redirect {
                                    kind: RedirectKind::Truncate,
                                    target: w,
                                });
                                Ok(())
                            }
                        }
                        _ => unjudgeable("this redirection is not judged"),
                    };
                }
            };
            match target {
                ast::IoFileRedirectTarget::Filename(w) => {
                    out.redirects.push(Redirect {
                        kind,
                        target: parse_word(&w.value)?,
                    });
                    Ok(())
                }
                ast::IoFileRedirectTarget::Fd(_) => Ok(()),
                ast::IoFileRedirectTarget::ProcessSubstitution(..) => unjudgeable(
                    "process substitution `<(...)` / `>(...)` runs a command whose output is not known",
                ),
                ast::IoFileRedirectTarget::Duplicate(w) => {
                    out.redirects.push(Redirect {
                        kind,
                        target: parse_word(&w.value)?,
                    });
                    Ok(())
                }
            }
        }
        ast::IoRedirect::OutputAndError(w, append) => {
            out.redirects.push(Redirect {
                kind: if *append {
                    RedirectKind::Append
                } else {
                    RedirectKind::Truncate
                },
                target: parse_word(&w.value)?,
            });
            Ok(())
        }
        ast::IoRedirect::HereDocument(_, doc) => {
            if doc.requires_expansion
                && (doc.doc.value.contains('$') || doc.doc.value.contains('`'))
            {
                return unjudgeable(
                    "a here-document with `$` or backticks expands them when it runs; quote its delimiter (`<<'EOF'`)",
                );
            }
            out.here_input = true;
            Ok(())
        }
        ast::IoRedirect::HereString(_, w) => {
            parse_word(&w.value)?;
            out.here_input = true;
            Ok(())
        }
    }
}

/// Whether unquoted text has a `{…,…}` or `{a..b}` brace expansion (`{}` alone is literal).
fn brace_expansion(t: &str) -> bool {
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if after[..close].contains(',') || after[..close].contains("..") => {
                return true
            }
            Some(close) => rest = &after[close + 1..],
            None => return false,
        }
    }
    false
}

/// Reduces a word to its literal text, or says why it has none before it runs.
pub(crate) fn parse_word(raw: &str) -> Result<Word, Unjudgeable> {
    let pieces = word::parse(raw, &options())
        .map_err(|e| Unjudgeable(format!("the word `{raw}` is not valid shell syntax ({e})")))?;
    let mut w = Word::literal(String::new());
    pieces_into(&pieces, false, &mut w)?;
    Ok(w)
}

fn pieces_into(
    pieces: &[WordPieceWithSource],
    quoted: bool,
    w: &mut Word,
) -> Result<(), Unjudgeable> {
    for p in pieces {
        match &p.piece {
            WordPiece::Text(t) => {
                if !quoted {
                    if t.contains(['*', '?', '[']) || t.contains("@(") || t.contains("!(") || t.contains("+(") {
                        w.glob = true;
                    }
                    if brace_expansion(t) {
                        return unjudgeable(format!(
                            "brace expansion in `{t}` makes words the policy cannot see; quote the braces"
                        ));
                    }
                }
                w.text.push_str(t);
            }
            WordPiece::SingleQuotedText(t) => w.text.push_str(t),
            WordPiece::AnsiCQuotedText(t) => {
                if t.contains('\\') {
                    return unjudgeable("escapes inside `$'...'` are not judged; write the characters");
                }
                w.text.push_str(t);
            }
            WordPiece::DoubleQuotedSequence(inner) => pieces_into(inner, true, w)?,
            WordPiece::GettextDoubleQuotedSequence(_) => {
                return unjudgeable("`$\"...\"` (translated strings) is not judged")
            }
            WordPiece::TildeExpansion(TildeExpr::Home) if w.text.is_empty() => {
                w.tilde = true;
                w.text.push('~');
            }
            WordPiece::TildeExpansion(_) => {
                return unjudgeable("a `~user`, `~+` or `~-` expansion is not judged; write the path")
            }
            WordPiece::ParameterExpansion(_) => {
                return unjudgeable(
                    "a variable's value (`$NAME`, `${...}`) is not known before the command runs; write the value",
                )
            }
            WordPiece::CommandSubstitution(_) => {
                return unjudgeable("a command substitution `$(...)` runs a command whose output is not known")
            }
            WordPiece::BackquotedCommandSubstitution(_) => {
                return unjudgeable("a backtick command substitution runs a command whose output is not known")
            }
            WordPiece::ArithmeticExpression(_) => {
                return unjudgeable("an arithmetic expansion `$((...))` is not judged")
            }
            WordPiece::EscapeSequence(e) => {
                let ch = e.strip_prefix('\\').unwrap_or(e);
                if quoted && !ch.starts_with(['$', '`', '"', '\\', '\n']) {
                    w.text.push('\\');
                }
                if ch != "\n" {
                    w.text.push_str(ch);
                }
            }
        }
    }
    Ok(())
}
