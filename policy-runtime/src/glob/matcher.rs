//! Matching a parsed glob against a path without building an automaton.
//!
//! The matcher simulates the glob over sets of positions, so its cost is bounded by
//! `glob length × path length` whatever the glob looks like: no size limit can be hit, no
//! input makes it backtrack exponentially, and a glob of any length is matched. It is the
//! matcher of every single glob and of glob lists too large for one automaton (see
//! [`super::GlobList`]); its language is exactly that of [`super::Glob::to_regex`], which the
//! property tests check.

use super::{Component, Token};

/// Whether `path` (absolute; the root is `/`) is in the language of `components`.
pub(super) fn is_match(components: &[Component], path: &str) -> bool {
    let parts: Vec<&str> = if path == "/" {
        Vec::new()
    } else if let Some(rest) = path.strip_prefix('/') {
        rest.split('/').collect()
    } else {
        return false;
    };
    // reachable[i]: the components matched so far can end just before path component i.
    let mut reachable = vec![false; parts.len() + 1];
    reachable[0] = true;
    for component in components {
        let mut next = vec![false; parts.len() + 1];
        match component {
            Component::Recursive => {
                // `**` crosses zero or more non-empty components.
                let mut on = false;
                for i in 0..=parts.len() {
                    on = reachable[i] || (on && !parts[i - 1].is_empty());
                    next[i] = on;
                }
            }
            Component::Pattern(tokens) => {
                for i in 0..parts.len() {
                    if reachable[i] && component_matches(tokens, parts[i]) {
                        next[i + 1] = true;
                    }
                }
            }
        }
        if !next.contains(&true) {
            return false;
        }
        reachable = next;
    }
    reachable[parts.len()]
}

/// Whether one path component is spelled by `tokens`.
pub(super) fn component_matches(tokens: &[Token], text: &str) -> bool {
    advance(tokens, text, vec![0]).last() == Some(&text.len())
}

/// The byte positions (sorted, char boundaries) reachable after `tokens` from the positions
/// `at`. The set stays small for literals and `?`; a `*` makes it every position after the
/// first, which bounds the work by `tokens × text length`.
fn advance(tokens: &[Token], text: &str, mut at: Vec<usize>) -> Vec<usize> {
    for token in tokens {
        let next: Vec<usize> = match token {
            Token::Star => match at.first() {
                Some(&first) => (first..=text.len())
                    .filter(|&i| text.is_char_boundary(i))
                    .collect(),
                None => Vec::new(),
            },
            Token::Alternation(alts) => {
                let mut union: Vec<usize> = alts
                    .iter()
                    .flat_map(|alt| advance(alt, text, at.clone()))
                    .collect();
                union.sort_unstable();
                union.dedup();
                union
            }
            one => at
                .iter()
                .filter_map(|&i| {
                    let c = text[i..].chars().next()?;
                    one_char(one, c).then_some(i + c.len_utf8())
                })
                .collect(),
        };
        if next.is_empty() {
            return next;
        }
        at = next;
    }
    at
}

/// Whether a single-character token admits `c` (components never contain `/`).
fn one_char(token: &Token, c: char) -> bool {
    match token {
        Token::Literal(l) => *l == c,
        Token::Question => c != '/',
        Token::Class { negated, ranges } => {
            let inside = ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c));
            c != '/' && inside != *negated
        }
        Token::Star | Token::Alternation(_) => false,
    }
}
