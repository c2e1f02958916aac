//! How deeply a token stream may make the parser and the walkers recurse, estimated before
//! anything recursive touches it.
//!
//! `syn` parses and every visitor walks by recursion, one stack frame (or a few) per level of
//! the syntax tree. A tree deepens with nested delimiters (`((((x))))`, `{{{{}}}}`), but also
//! without them: `Vec<Vec<Vec<u8>>>`, `!!!!x`, `a + b + c + …` (a left-nested chain),
//! `a.b().c().d()`, `else if` chains, closures returning closures. The lexer and the token
//! stream's `Drop` do not recurse, so the tokens can be measured safely first.
//!
//! The estimate over-approximates the tree's depth: within one delimited group, the tokens are
//! cut into *segments* at places where the grammar parses siblings in a loop (`;`, a `,` outside
//! `<…>` and closure `|…|`, `=>`, and the end of a braced item or statement that the next token
//! cannot continue), and a group nested in a segment is counted as deep as the group itself plus
//! every token of that segment. A file that exceeds [`MAX_NESTING`] is reported as
//! unanalysable instead of being parsed.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};

/// The largest estimate the lint parses. The lint runs on a thread whose stack (see
/// `LINT_STACK_BYTES` in `lint/mod.rs`) holds this many levels four times over in an
/// unoptimised build, where the costliest construct (`&&&…T`) takes about 32 KiB of stack per
/// level; no file of the 318 crates `scripts/lint-registry-bench.sh` reads here reaches it.
pub(crate) const MAX_NESTING: usize = 4_000;

/// The deepest nesting of delimiters the lint reads inside macro invocations that it scans
/// token by token rather than parses (see `MAX_PARSED_MACRO_DEPTH`): cheap levels, about
/// 2 KiB of stack each.
pub(crate) const MAX_GROUP_DEPTH: usize = 50_000;

/// How deep a token stream goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Depth {
    /// The estimated depth of the syntax tree, over code that is parsed.
    pub(crate) parsed: usize,
    /// The deepest nesting of delimiters anywhere.
    pub(crate) groups: usize,
}

impl Depth {
    /// Whether the lint can read tokens this deep.
    pub(crate) fn within_limits(self) -> bool {
        self.parsed <= MAX_NESTING && self.groups <= MAX_GROUP_DEPTH
    }
}

/// One group still to measure.
struct Pending {
    stream: TokenStream,
    /// Parsed depth at which its contents start.
    base: usize,
    groups: usize,
    /// Macro invocations around it.
    macros: usize,
    span: Span,
}

/// The estimated depth of `tokens`, and where the deepest point starts.
///
/// Inside macro invocations nested more than `macros_parsed` deep the tokens are only
/// scanned, so they count towards [`Depth::groups`] alone.
pub(crate) fn estimate(tokens: TokenStream, macros_parsed: usize) -> (Depth, Span) {
    let mut deepest = (Depth::default(), Span::call_site());
    let mut pending = vec![Pending {
        stream: tokens,
        base: 0,
        groups: 0,
        macros: 0,
        span: Span::call_site(),
    }];
    while let Some(group) = pending.pop() {
        let level: Vec<TokenTree> = group.stream.into_iter().collect();
        let scanned = group.macros > macros_parsed;
        let segments = if scanned {
            vec![0; level.len()]
        } else {
            segment_lengths(&level)
        };
        let here = Depth {
            parsed: group.base + segments.iter().copied().max().unwrap_or(0),
            groups: group.groups,
        };
        if here.parsed > deepest.0.parsed {
            deepest.1 = group.span;
        }
        deepest.0.parsed = deepest.0.parsed.max(here.parsed);
        deepest.0.groups = deepest.0.groups.max(here.groups);
        for (i, tt) in level.iter().enumerate() {
            if let TokenTree::Group(g) = tt {
                let macros = group.macros + usize::from(invokes_macro(&level, i));
                let base = if macros > macros_parsed {
                    group.base + segments[i]
                } else {
                    group.base + segments[i] + 1
                };
                pending.push(Pending {
                    stream: g.stream(),
                    base,
                    groups: group.groups + 1,
                    macros,
                    span: g.span_open(),
                });
            }
        }
    }
    deepest
}

/// Whether the group at `i` holds a macro invocation's tokens: `name!(...)`, or the rules of
/// `macro_rules! name { ... }`. A keyword before `!` is an operator (`if !(a)`, `&mut !(b)`).
fn invokes_macro(level: &[TokenTree], i: usize) -> bool {
    let at = |j: Option<usize>| j.and_then(|j| level.get(j));
    let bang = |j: Option<usize>| matches!(at(j), Some(TokenTree::Punct(p)) if p.as_char() == '!');
    let name = |j: Option<usize>| matches!(at(j), Some(TokenTree::Ident(id)) if !is_keyword(&id.to_string()));
    (bang(i.checked_sub(1)) && name(i.checked_sub(2)))
        || (matches!(at(i.checked_sub(3)), Some(TokenTree::Ident(id)) if id == "macro_rules")
            && bang(i.checked_sub(2))
            && name(i.checked_sub(1)))
}

fn is_keyword(word: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "as", "async", "await", "box", "break", "const", "continue", "crate", "do", "dyn", "else",
        "enum", "extern", "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match",
        "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super",
        "trait", "true", "try", "type", "unsafe", "use", "where", "while", "yield", "become",
    ];
    KEYWORDS.contains(&word)
}

/// For each token of one level, the length of the segment holding it.
fn segment_lengths(level: &[TokenTree]) -> Vec<usize> {
    let mut lengths = vec![0; level.len()];
    let mut start = 0;
    let mut angle = 0usize;
    let mut in_pipes = false;
    let close = |lengths: &mut Vec<usize>, start: usize, end: usize| {
        for l in &mut lengths[start..end] {
            *l = end - start;
        }
    };
    for (i, tt) in level.iter().enumerate() {
        let ends_segment = match tt {
            TokenTree::Punct(p) => match p.as_char() {
                ';' => true,
                ',' => angle == 0 && !in_pipes,
                '<' => {
                    angle += 1;
                    false
                }
                '>' => {
                    let after = |c: char| {
                        i > 0
                            && matches!(&level[i - 1], TokenTree::Punct(q)
                                if q.as_char() == c && q.spacing() == proc_macro2::Spacing::Joint)
                    };
                    if after('=') {
                        // `=>`: a match arm's pattern and guard end here.
                        true
                    } else {
                        if !after('-') {
                            angle = angle.saturating_sub(1);
                        }
                        false
                    }
                }
                '|' => {
                    let joint_pair = p.spacing() == proc_macro2::Spacing::Joint
                        && matches!(level.get(i + 1), Some(TokenTree::Punct(q)) if q.as_char() == '|');
                    let second_of_pair = i > 0
                        && matches!(&level[i - 1], TokenTree::Punct(q)
                            if q.as_char() == '|' && q.spacing() == proc_macro2::Spacing::Joint);
                    if !joint_pair && !second_of_pair {
                        in_pipes = !in_pipes;
                    }
                    false
                }
                _ => false,
            },
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                // A braced item or statement ends here when the next token cannot continue
                // an expression (an operator, `.`, `?`, `as`, `else` or another group could).
                match level.get(i + 1) {
                    Some(TokenTree::Ident(next)) => next != "else" && next != "as",
                    Some(TokenTree::Literal(_)) => true,
                    Some(TokenTree::Punct(p)) => p.as_char() == '#',
                    _ => false,
                }
            }
            _ => false,
        };
        if ends_segment {
            close(&mut lengths, start, i + 1);
            start = i + 1;
            angle = 0;
            in_pipes = false;
        }
    }
    close(&mut lengths, start, level.len());
    lengths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(src: &str) -> usize {
        estimate(src.parse().unwrap(), 4).0.parsed
    }

    #[test]
    fn ordinary_code_is_shallow() {
        let items =
            "fn a() -> u8 { let x = [1, 2, 3]; x[0] } impl S { fn b(&self) {} } ".repeat(500);
        assert!(depth(&items) < 20, "{}", depth(&items));
        let table = format!(
            "static T: [(u32, u32); 5000] = [{}];",
            "(1, 2), ".repeat(5000)
        );
        assert!(depth(&table) < 20, "{}", depth(&table));
        let arms = format!(
            "fn f(x: u8) -> u8 {{ match x {{ {} _ => 0 }} }}",
            (0..2000)
                .map(|i| format!("{i} | 9 => {{ {i} }}\n"))
                .collect::<String>()
        );
        assert!(depth(&arms) < 20, "{}", depth(&arms));
    }

    #[test]
    fn every_kind_of_nesting_counts() {
        let n = 2000;
        for src in [
            format!("fn f() {{ {}{} }}", "{".repeat(n), "}".repeat(n)),
            format!("type T = {}u8{};", "Vec<".repeat(n), ">".repeat(n)),
            format!("fn f() {{ {}x; }}", "!".repeat(n)),
            format!("fn f() {{ a{}; }}", " + a".repeat(n)),
            format!("fn f() {{ a{}; }}", ".b()".repeat(n)),
            format!("fn f() {{ if a {{}}{} }}", " else if a {}".repeat(n)),
            format!("fn f() {{ {} x; }}", "|a, b| ".repeat(n)),
            format!("type T = {}u8{};", "X<a, ".repeat(n), ">".repeat(n)),
            format!("fn f() {{ {}a; }}", "unsafe {a} + ".repeat(n)),
            format!("fn f() {{ if {}a{} {{}} }}", "!(".repeat(n), ")".repeat(n)),
            format!(
                "fn f() {{ x!({}a{}); }}",
                "&mut !(".repeat(n),
                ")".repeat(n)
            ),
        ] {
            assert!(depth(&src) >= n, "{}: {}", &src[..40], depth(&src));
        }
    }

    #[test]
    fn macro_arguments_past_the_parsed_depth_only_count_as_groups() {
        let n = 20_000;
        let src = format!("fn f() {{ {}x{}; }}", "m!(".repeat(n), ")".repeat(n));
        let (d, _) = estimate(src.parse().unwrap(), 4);
        assert!(d.parsed < 30, "{d:?}");
        assert_eq!(d.groups, n + 1);
        let rules = format!("macro_rules! m {{ () => {{ {} }} }}", "!x ".repeat(n));
        assert!(estimate(rules.parse().unwrap(), 0).0.parsed < 10);
    }
}
