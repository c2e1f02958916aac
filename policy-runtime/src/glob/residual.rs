//! What is left of a glob once a literal path prefix has been read: its *residual*.
//!
//! For a literal path `P` (whole components) the residual of a glob is the set of paths `s`
//! such that `P` followed by `s` matches the glob (the root spelled as the empty string, as in
//! [`Glob::to_regex`]). Because globs match component by component, the residual is again a
//! union of glob tails: the glob's components left after those that read `P`, where a `**`
//! may read any number of `P`'s components. The verifier uses it to compare only what follows
//! a shared prefix, so tools whose globs differ only in their leading directories ask the same
//! question of their automata (and get the answer from its cache).

use super::matcher::component_matches;
use super::relation::{component_within, components_may_meet};
use super::{regex_of, Component, Glob, Token};

impl Glob {
    /// The residual of the glob after the literal path whose components are `prefix`: regexes
    /// (in the convention of [`Glob::to_regex`]) whose union holds exactly the normalized paths
    /// `s` (the root as the empty string) for which `prefix` followed by `s` matches the glob.
    /// Empty when no path under `prefix` (or `prefix` itself) matches. The regexes are sorted
    /// and distinct.
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// let g = |s| Glob::new(s).unwrap();
    /// // The literal prefix is read off; what follows is the question left.
    /// assert_eq!(g("/srv/app/*.log").residual_regexes(&["srv", "app"]), [r"^/[^/]*\.log$"]);
    /// // A path equal to the prefix is the empty residual, matched by `^$`.
    /// assert_eq!(g("/srv/app").residual_regexes(&["srv", "app"]), ["^$"]);
    /// // `**` reads any number of the prefix's components.
    /// assert_eq!(
    ///     g("/**/app/*").residual_regexes(&["srv", "app"]),
    ///     [r"^(?:/[^/]+)*/app/[^/]*$", r"^/[^/]*$"],
    /// );
    /// assert!(g("/data/**").residual_regexes(&["srv"]).is_empty());
    /// ```
    pub fn residual_regexes<S: AsRef<str>>(&self, prefix: &[S]) -> Vec<String> {
        let steps: Vec<Component> = prefix
            .iter()
            .map(|text| Component::Pattern(text.as_ref().chars().map(Token::Literal).collect()))
            .collect();
        let steps: Vec<&Component> = steps.iter().collect();
        self.residual_after(&steps)
            .expect("a literal prefix never leaves the residual undecided")
    }

    /// The residual of the glob after a prefix of components, each a literal text or a
    /// pattern standing for *any one* of its texts: regexes as in [`Glob::residual_regexes`],
    /// the same whichever texts the patterns stand for. `Err(i)` when that is not so: whether
    /// the glob goes on after prefix component `i` depends on which text its pattern stands
    /// for (as far as the components show); the residual after the first `i` components is
    /// then always decided.
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// let g = |s| Glob::new(s).unwrap();
    /// let own = g("/home/*/proj/**");
    /// let prefix: Vec<_> = own.components()[..3].iter().collect(); // home, *, proj
    /// // The same pattern, `**` or a lone `*` goes on whatever `*` stands for...
    /// assert_eq!(g("/home/*/proj/*.rs").residual_after(&prefix), Ok(vec![r"^/[^/]*\.rs$".to_string()]));
    /// assert_eq!(g("/home/**").residual_after(&prefix), Ok(vec![r"^(?:/[^/]+)*$".to_string()]));
    /// // ...a literal user does not.
    /// assert_eq!(g("/home/alice/proj/**").residual_after(&prefix), Err(1));
    /// ```
    pub fn residual_after(&self, prefix: &[&Component]) -> Result<Vec<String>, usize> {
        let components = self.components();
        // Each prefix component's literal text, worked out when first needed (most components
        // of a prefix are the glob's own, equal token for token).
        let mut literals: Vec<Option<Option<String>>> = vec![None; prefix.len()];
        // seen[offset * (prefix + 1) + read]: the glob's components from `offset` on were
        // already tried against the prefix's components from `read` on (memoized, so several
        // `**` cannot make the walk exponential).
        let width = prefix.len() + 1;
        let mut seen = vec![false; (components.len() + 1) * width];
        let mut tails = Vec::new();
        let mut stack = vec![(0usize, 0usize)];
        while let Some((offset, read)) = stack.pop() {
            let slot = offset * width + read;
            if std::mem::replace(&mut seen[slot], true) {
                continue;
            }
            if read == prefix.len() {
                tails.push(offset);
                continue;
            }
            match components.get(offset) {
                // The glob ended before the prefix did: only shorter paths match.
                None => {}
                Some(Component::Recursive) => {
                    // `**` reads this prefix component (and stays), or reads nothing.
                    stack.push((offset, read + 1));
                    stack.push((offset + 1, read));
                }
                Some(own @ Component::Pattern(tokens)) => {
                    let goes_on = if own == prefix[read] {
                        true
                    } else {
                        let literal =
                            literals[read].get_or_insert_with(|| prefix[read].as_literal());
                        match (literal, prefix[read]) {
                            (Some(text), _) => component_matches(tokens, text),
                            (None, Component::Pattern(step)) => {
                                if component_within(prefix[read], own) {
                                    true
                                } else if !components_may_meet(tokens, step) {
                                    false
                                } else {
                                    return Err(read);
                                }
                            }
                            // A `**` step stands for any number of components: never a prefix.
                            (None, Component::Recursive) => return Err(read),
                        }
                    };
                    if goes_on {
                        stack.push((offset + 1, read + 1));
                    }
                }
            }
        }
        let mut regexes: Vec<String> = tails
            .into_iter()
            .map(|offset| regex_of(&components[offset..]))
            .collect();
        regexes.sort();
        regexes.dedup();
        Ok(regexes)
    }
}

impl Component {
    /// The regex (in the convention of [`Glob::to_regex`]) of the one-component paths this
    /// component matches: `/` and one of its texts.
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// let g = Glob::new("/srv/*.log")?;
    /// assert_eq!(g.components()[1].to_regex(), r"^/[^/]*\.log$");
    /// # Ok::<(), policy_runtime::glob::GlobError>(())
    /// ```
    pub fn to_regex(&self) -> String {
        regex_of(std::slice::from_ref(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The residual against the matcher: for every glob, prefix and tail of a small
    /// alphabet, `prefix + tail` matches the glob exactly when `tail` matches a residual regex.
    #[test]
    fn residual_agrees_with_the_matcher() {
        let globs = [
            "/**",
            "/a/**",
            "/a",
            "/a/b",
            "/a/*",
            "/a/?",
            "/*/b",
            "/a/**/b",
            "/**/b/**",
            "/**/**/a",
            "/a/{b,c}/**",
            "/[ab]/b",
            "/a/b/c",
        ];
        let mut tails = vec![String::new()];
        tails.extend(crate::glob::sample_paths(&["a", "b", "c"], 3));
        let prefixes: [&[&str]; 5] = [&[], &["a"], &["a", "b"], &["b"], &["a", "a"]];
        for glob in globs {
            let g = Glob::new(glob).unwrap();
            for prefix in prefixes {
                let residual: Vec<regex_automata::meta::Regex> = g
                    .residual_regexes(prefix)
                    .iter()
                    .map(|r| regex_automata::meta::Regex::new(r).unwrap())
                    .collect();
                for tail in &tails {
                    let path = format!("/{}{tail}", prefix.join("/"));
                    let path = if prefix.is_empty() && tail.is_empty() {
                        "/".to_string()
                    } else if prefix.is_empty() {
                        tail.clone()
                    } else {
                        path
                    };
                    let by_residual = residual.iter().any(|r| r.is_match(tail.as_str()));
                    assert_eq!(
                        g.is_match(&path),
                        by_residual,
                        "{glob} after {prefix:?}, tail {tail:?}"
                    );
                }
            }
            // Prefixes with patterns: a decided residual holds for every text a pattern
            // stands for.
            for prefix in ["/*", "/a/?", "/[ab]/b", "/*/*", "/{a,c}/b"] {
                let steps = Glob::new(prefix).unwrap();
                let steps: Vec<&Component> = steps.components().iter().collect();
                let Ok(residual) = g.residual_after(&steps) else {
                    continue;
                };
                let residual: Vec<regex_automata::meta::Regex> = residual
                    .iter()
                    .map(|r| regex_automata::meta::Regex::new(r).unwrap())
                    .collect();
                let step_glob = Glob::new(prefix).unwrap();
                let heads = tails
                    .iter()
                    .filter(|h| !h.is_empty() && step_glob.is_match(h));
                for head in heads {
                    for tail in &tails {
                        let by_residual = residual.iter().any(|r| r.is_match(tail.as_str()));
                        assert_eq!(
                            g.is_match(&format!("{head}{tail}")),
                            by_residual,
                            "{glob} after {head} (as {prefix}), tail {tail:?}"
                        );
                    }
                }
            }
        }
    }
}
