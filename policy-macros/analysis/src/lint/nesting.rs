//! How deeply a token stream may make the parser and the walkers recurse, estimated before
//! anything recursive touches it. Shared by the two capability lints: `toolpolicy-lint`
//! (manifest-verify, `lint::nesting`) and the pre-parse check of `#[tool]` (policy-macros,
//! `depth`), each with its own limits.
//!
//! `syn` parses and every visitor walks by recursion, one stack frame (or a few) per level of
//! the syntax tree. A tree deepens with nested delimiters (`((((x))))`, `{{{{}}}}`), but also
//! without them: `Vec<Vec<Vec<u8>>>`, `!!!!x`, `a + b + c + …` (a left-nested chain),
//! `a.b().c().d()`, `else if` chains, closures returning closures. The lexer and the token
//! stream's `Drop` do not recurse, so the tokens can be measured safely first, here without
//! recursion (an explicit stack).
//!
//! The estimate over-approximates the tree's depth: within one delimited group, the tokens are
//! cut into *segments* at places where the grammar parses siblings in a loop (`;`, a `,` outside
//! `<…>` and closure `|…|`, `=>`, and the end of a braced item or statement that the next token
//! cannot continue), and a group nested in a segment is counted as deep as the group itself plus
//! every token of that segment.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};

/// How deep a token stream goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Depth {
    /// The estimated depth of the syntax tree, over code that is parsed.
    pub parsed: usize,
    /// The deepest nesting of delimiters anywhere.
    pub groups: usize,
    /// Like `parsed`, but a segment counts only the tokens that can start a level of
    /// recursion: chains of binary operators that syn parses in a loop (`a + b + c`,
    /// `a.b().c()`, `x == y && z`) and the operands that directly follow them count nothing,
    /// and a generic argument counts once (its `<`). Closer to syn's depth; used where the
    /// limit is low (`#[tool]`'s pre-parse check). Delimiters add nothing here: their
    /// nesting is `groups`.
    pub weighted: usize,
}

impl Depth {
    /// Whether both measures are within the given limits.
    pub fn within(self, max_parsed: usize, max_groups: usize) -> bool {
        self.parsed <= max_parsed && self.groups <= max_groups
    }
}

/// One group still to measure.
struct Pending {
    stream: TokenStream,
    /// Parsed depth at which its contents start.
    base: usize,
    /// The same for [`Depth::weighted`].
    weighted_base: usize,
    groups: usize,
    /// Macro invocations around it.
    macros: usize,
    span: Span,
}

/// The estimated depth of `tokens`, and where the deepest point starts.
///
/// Inside macro invocations nested more than `macros_parsed` deep the tokens are only
/// scanned, so they count towards [`Depth::groups`] alone.
pub fn estimate(tokens: TokenStream, macros_parsed: usize) -> (Depth, Span) {
    let mut deepest = (Depth::default(), Span::call_site());
    let mut pending = vec![Pending {
        stream: tokens,
        base: 0,
        weighted_base: 0,
        groups: 0,
        macros: 0,
        span: Span::call_site(),
    }];
    while let Some(group) = pending.pop() {
        let level: Vec<TokenTree> = group.stream.into_iter().collect();
        let scanned = group.macros > macros_parsed;
        let (segments, weights) = if scanned {
            (vec![0; level.len()], vec![0; level.len()])
        } else {
            segment_lengths(&level)
        };
        let here = Depth {
            parsed: group.base + segments.iter().copied().max().unwrap_or(0),
            groups: group.groups,
            weighted: group.weighted_base + weights.iter().copied().max().unwrap_or(0),
        };
        if here.parsed > deepest.0.parsed {
            deepest.1 = group.span;
        }
        deepest.0.parsed = deepest.0.parsed.max(here.parsed);
        deepest.0.groups = deepest.0.groups.max(here.groups);
        deepest.0.weighted = deepest.0.weighted.max(here.weighted);
        for (i, tt) in level.iter().enumerate() {
            if let TokenTree::Group(g) = tt {
                let macros = group.macros + usize::from(invokes_macro(&level, i));
                let parsed = usize::from(macros <= macros_parsed);
                pending.push(Pending {
                    stream: g.stream(),
                    base: group.base + segments[i] + parsed,
                    weighted_base: group.weighted_base + weights[i],
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

/// Whether a token ends an operand, so that a punctuation mark after it is a binary operator.
fn ends_operand(tt: &TokenTree) -> bool {
    match tt {
        TokenTree::Ident(id) => !is_keyword(&id.to_string()),
        TokenTree::Literal(_) | TokenTree::Group(_) => true,
        TokenTree::Punct(p) => p.as_char() == '?',
    }
}

/// For each token of one level, whether it counts towards [`Depth::weighted`]: everything but
/// the binary operators syn parses in a loop (after an operand), the operand or postfix group
/// right after one, and the name after a generic `<`. Assignment (`=`, right-associative),
/// `->`, `:`, `@`, `..` and every prefix operator count.
fn weigh(level: &[TokenTree]) -> Vec<bool> {
    let mut counts = vec![true; level.len()];
    // Whether the token before was an operator that did not count (the next operand does not).
    let mut after_loop_op = false;
    let mut after_angle = false;
    for (i, tt) in level.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| &level[j]);
        let prev_ends_operand = prev.is_some_and(ends_operand) && !after_angle;
        let count = match tt {
            TokenTree::Punct(p) => {
                let c = p.as_char();
                let continues = matches!(prev, Some(TokenTree::Punct(q))
                    if q.spacing() == proc_macro2::Spacing::Joint && !counts[i - 1]);
                let arrow = c == '-'
                    && p.spacing() == proc_macro2::Spacing::Joint
                    && matches!(level.get(i + 1), Some(TokenTree::Punct(q)) if q.as_char() == '>');
                let joint_eq = p.spacing() == proc_macro2::Spacing::Joint
                    && matches!(level.get(i + 1), Some(TokenTree::Punct(q)) if q.as_char() == '=');
                let looped = "+-*/%^&|!=>.".contains(c);
                // `a = b`, `a += b` recurse (right-associative); `==`, `!=`, `<=`, `>=` do not.
                let assignment = (c == '='
                    && !continues
                    && !matches!(level.get(i + 1), Some(TokenTree::Punct(q)) if q.as_char() == '='))
                    || (joint_eq && c != '=' && c != '!' && c != '<' && c != '>');
                let binary = (prev_ends_operand || continues) && looped && !arrow && !assignment;
                // A `>` closes (generics, `->`, `=>`) or compares: it never opens a level.
                !binary && c != '>'
            }
            TokenTree::Ident(id) => !(after_loop_op || after_angle) || is_keyword(&id.to_string()),
            TokenTree::Literal(_) => !after_loop_op,
            // Delimiters are limited on their own (`groups`).
            TokenTree::Group(_) => false,
        };
        counts[i] = count;
        after_loop_op = matches!(tt, TokenTree::Punct(_)) && !count;
        after_angle = matches!(tt, TokenTree::Punct(p) if p.as_char() == '<');
    }
    counts
}

/// For each token of one level, the length of the segment holding it, and its weight (the
/// tokens of the segment that count, see [`weigh`]).
fn segment_lengths(level: &[TokenTree]) -> (Vec<usize>, Vec<usize>) {
    let counts = weigh(level);
    let mut weights = vec![0; level.len()];
    let mut lengths = vec![0; level.len()];
    let mut start = 0;
    let mut angle = 0usize;
    let mut in_pipes = false;
    let close = |lengths: &mut Vec<usize>, weights: &mut Vec<usize>, start: usize, end: usize| {
        let weight = counts[start..end].iter().filter(|c| **c).count();
        for l in &mut lengths[start..end] {
            *l = end - start;
        }
        for w in &mut weights[start..end] {
            *w = weight;
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
            close(&mut lengths, &mut weights, start, i + 1);
            start = i + 1;
            angle = 0;
            in_pipes = false;
        }
    }
    close(&mut lengths, &mut weights, start, level.len());
    (lengths, weights)
}
