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
use super::{regex_of, Component, Glob};

impl Glob {
    /// How many leading components are literal text (no wildcard, class or alternation).
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// assert_eq!(Glob::new("/srv/app/*.log")?.literal_depth(), 2);
    /// assert_eq!(Glob::new("/srv/app")?.literal_depth(), 2);
    /// assert_eq!(Glob::new("/**/x")?.literal_depth(), 0);
    /// # Ok::<(), policy_runtime::glob::GlobError>(())
    /// ```
    pub fn literal_depth(&self) -> usize {
        self.components()
            .iter()
            .take_while(|c| c.as_literal().is_some())
            .count()
    }

    /// The first `depth` components as literal texts; `None` when one of them is not literal.
    ///
    /// ```
    /// use policy_runtime::glob::Glob;
    /// let g = Glob::new("/srv/app/*.log")?;
    /// assert_eq!(g.literal_components(2), Some(vec!["srv".to_string(), "app".to_string()]));
    /// assert_eq!(g.literal_components(3), None);
    /// # Ok::<(), policy_runtime::glob::GlobError>(())
    /// ```
    pub fn literal_components(&self, depth: usize) -> Option<Vec<String>> {
        self.components()
            .get(..depth)?
            .iter()
            .map(Component::as_literal)
            .collect()
    }

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
        let components = self.components();
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
                Some(Component::Pattern(tokens)) => {
                    if component_matches(tokens, prefix[read].as_ref()) {
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
        regexes
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
        let names = ["a", "b", "c"];
        let mut tails = vec![String::new()];
        let mut level = vec![String::new()];
        for _ in 0..3 {
            level = level
                .iter()
                .flat_map(|p| names.iter().map(move |x| format!("{p}/{x}")))
                .collect();
            tails.extend(level.iter().cloned());
        }
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
        }
    }
}
