//! Cheap, one-sided answers about two globs' languages, read off their components.
//!
//! [`Glob::covers`] says `true` only when every path of one glob is a path of the other, and
//! [`Glob::may_overlap`] says `false` only when no path is in both; otherwise they do not know
//! (`false`, `true`). The verifier uses them to leave out of its exact automata searches the
//! globs whose part of the answer is already settled, so the searches stay exact.

use super::matcher::component_matches;
use super::{Component, Glob, Token};

impl Glob {
    /// Whether every path `other` matches is also matched by `self`, as far as the components
    /// show: `self` is `other` component by component (each of its components the same, a
    /// lone `*`, or matching `other`'s literal one), or a tree (`prefix/**`) whose prefix is
    /// such a match of `other`'s leading components. `false` means "not shown", not "no".
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// let g = |s| Glob::new(s).unwrap();
    /// assert!(g("/srv/app/**").covers(&g("/srv/app/*.log")));
    /// assert!(g("/srv/*/x.db").covers(&g("/srv/?/x.db")));
    /// assert!(g("/srv/*.log").covers(&g("/srv/a.log")));
    /// assert!(!g("/srv/app/*.log").covers(&g("/srv/app/**")));
    /// ```
    pub fn covers(&self, other: &Glob) -> bool {
        let (outer, inner) = (self.components(), other.components());
        match outer.split_last() {
            // A tree: `other`'s leading components must be within its prefix, one by one;
            // what follows them is anything, and the tree takes it.
            Some((Component::Recursive, prefix)) if !has_recursive(prefix) => {
                inner.len() >= prefix.len()
                    && prefix
                        .iter()
                        .zip(inner)
                        .all(|(o, i)| component_within(i, o))
            }
            _ if !has_recursive(outer) => {
                inner.len() == outer.len()
                    && outer.iter().zip(inner).all(|(o, i)| component_within(i, o))
            }
            _ => false,
        }
    }

    /// Whether some path could match both globs: `false` only when, before either glob's
    /// first `**`, two components at the same depth cannot spell the same text, or neither
    /// glob has a `**` and they have different numbers of components.
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// let g = |s| Glob::new(s).unwrap();
    /// assert!(!g("/srv/app/**").may_overlap(&g("/data/**")));
    /// assert!(!g("/srv/*.log").may_overlap(&g("/srv/a.txt")));
    /// assert!(g("/srv/*/x").may_overlap(&g("/srv/a/*")));
    /// ```
    pub fn may_overlap(&self, other: &Glob) -> bool {
        let (a, b) = (self.components(), other.components());
        for (x, y) in a.iter().zip(b) {
            match (x, y) {
                (Component::Pattern(p), Component::Pattern(q)) => {
                    if !components_may_meet(p, q) {
                        return false;
                    }
                }
                _ => return true,
            }
        }
        if has_recursive(a) || has_recursive(b) {
            return true;
        }
        a.len() == b.len()
    }

    /// Whether some path of the glob could have `names` as consecutive components (`.git`,
    /// `hooks`): `false` only for a glob without `**` none of whose runs of components can
    /// spell them.
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// let g = |s| Glob::new(s).unwrap();
    /// assert!(!g("/srv/*/x.db").may_contain(&[".git", "hooks"]));
    /// assert!(g("/srv/*/hooks/x").may_contain(&[".git", "hooks"]));
    /// assert!(g("/srv/**").may_contain(&[".git", "hooks"]));
    /// ```
    pub fn may_contain(&self, names: &[&str]) -> bool {
        let components = self.components();
        has_recursive(components)
            || components.windows(names.len()).any(|run| {
                run.iter().zip(names).all(|(c, name)| match c {
                    Component::Pattern(tokens) => component_matches(tokens, name),
                    Component::Recursive => true,
                })
            })
    }
}

fn has_recursive(components: &[Component]) -> bool {
    components.iter().any(|c| matches!(c, Component::Recursive))
}

/// Whether every text `inner` spells, `outer` spells too (shown, not decided).
pub(super) fn component_within(inner: &Component, outer: &Component) -> bool {
    match (inner, outer) {
        (_, Component::Recursive) | (Component::Recursive, _) => false,
        // Two literals (the common case: directory names) spell one text each.
        (Component::Pattern(i), Component::Pattern(o)) if all_literal(i) && all_literal(o) => {
            i == o
        }
        (Component::Pattern(i), Component::Pattern(o)) => {
            i == o
                || matches!(o.as_slice(), [Token::Star])
                || inner
                    .as_literal()
                    .is_some_and(|text| component_matches(o, &text))
                || wildcards_within(i, o)
        }
    }
}

/// The longest patterns [`wildcards_within`] compares (its work is their product).
const MAX_WILDCARD_TOKENS: usize = 64;

/// Whether `outer` spells every text of `inner`, both made of literals, `?` and `*` only:
/// `outer` reads `inner`'s tokens as text, its literal matching the same literal, its `?` one
/// literal or `?`, its `*` any run of tokens. Each text of `inner` is then spelled by `outer`
/// token block by token block (`u7?` is within `u7*`); `false` means "not shown".
fn wildcards_within(inner: &[Token], outer: &[Token]) -> bool {
    let simple = |t: &[Token]| {
        t.len() <= MAX_WILDCARD_TOKENS
            && t.iter()
                .all(|t| matches!(t, Token::Literal(_) | Token::Question | Token::Star))
    };
    if !simple(inner) || !simple(outer) {
        return false;
    }
    // reach[j]: `outer`'s tokens so far can have read exactly `inner[..j]`.
    let mut reach = vec![false; inner.len() + 1];
    reach[0] = true;
    for o in outer {
        let mut next = vec![false; inner.len() + 1];
        for j in 0..=inner.len() {
            match o {
                Token::Star => next[j] = reach[j] || (j > 0 && next[j - 1]),
                _ if j == 0 => {}
                Token::Question => {
                    next[j] =
                        reach[j - 1] && matches!(inner[j - 1], Token::Literal(_) | Token::Question)
                }
                Token::Literal(c) => next[j] = reach[j - 1] && inner[j - 1] == Token::Literal(*c),
                _ => {}
            }
        }
        reach = next;
    }
    reach[inner.len()]
}

/// Whether two one-component patterns might spell the same text: decided when either is a
/// literal, assumed otherwise.
pub(super) fn components_may_meet(p: &[Token], q: &[Token]) -> bool {
    if all_literal(p) && all_literal(q) {
        return p == q;
    }
    let literal = |tokens: &[Token]| -> Option<String> {
        tokens
            .iter()
            .map(|t| match t {
                Token::Literal(c) => Some(*c),
                _ => None,
            })
            .collect()
    };
    match (literal(p), literal(q)) {
        (Some(a), _) => component_matches(q, &a),
        (_, Some(b)) => component_matches(p, &b),
        _ => true,
    }
}

fn all_literal(tokens: &[Token]) -> bool {
    tokens.iter().all(|t| matches!(t, Token::Literal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(s: &str) -> Glob {
        Glob::new(s).unwrap()
    }

    /// Every `covers` and every `!may_overlap` is checked against the matcher on many paths:
    /// a covered glob's paths all match the cover, and no path matches two disjoint globs.
    #[test]
    fn answers_agree_with_the_matcher() {
        let globs = [
            "/**",
            "/a/**",
            "/a",
            "/a/b",
            "/a/*",
            "/a/?",
            "/a/*/c",
            "/a/?/c",
            "/a/b/**",
            "/a/**/c",
            "/a/{b,c}",
            "/a/[a-c]",
            "/a/[!b]",
            "/*/b",
            "/a/b*",
            "/a/*b",
            "/a/b?",
            "/a/?b",
            "/a/*?",
            "/a/?*",
            "/a/b?*",
            "/a/**/b?",
            "/x/**",
            "/a/b/c",
            "/a/b/c/**",
            "/*",
            "/**/b",
        ];
        // Every path of up to four components over a few names.
        let mut paths = vec!["/".to_string()];
        paths.extend(crate::glob::sample_paths(&["a", "b", "c", "bb"], 4));
        for a in globs {
            for b in globs {
                let (ga, gb) = (g(a), g(b));
                if ga.covers(&gb) {
                    for p in &paths {
                        assert!(!gb.is_match(p) || ga.is_match(p), "{a} covers {b}, not {p}");
                    }
                }
                if !ga.may_overlap(&gb) {
                    for p in &paths {
                        assert!(!(ga.is_match(p) && gb.is_match(p)), "{a}, {b} share {p}");
                    }
                }
            }
            for names in [&["a", "b"][..], &["b"], &["bb", "c"], &["c", "a", "b"]] {
                let ga = g(a);
                if !ga.may_contain(names) {
                    let run = format!("/{}", names.join("/"));
                    for p in paths.iter().filter(|p| ga.is_match(p)) {
                        let inner = format!("{p}/");
                        assert!(!inner.contains(&format!("{run}/")), "{a} has {p} ⊇ {run}");
                    }
                }
            }
        }
        assert!(g("/a/**").covers(&g("/a")));
        assert!(g("/**").covers(&g("/**")));
        assert!(!g("/a/**").covers(&g("/**")));
        assert!(!g("/a/b").may_overlap(&g("/a/c")));
        // Wildcard patterns within wider ones.
        assert!(g("/u7*/x").covers(&g("/u7?/x")));
        assert!(g("/a/*b*").covers(&g("/a/?b?")));
        assert!(g("/a/b*").covers(&g("/a/b?*")));
        assert!(!g("/u7?/x").covers(&g("/u7*/x")));
        assert!(!g("/a/?b").covers(&g("/a/*b")));
        assert!(!g("/a/b").may_overlap(&g("/a/b/c")));
    }
}
