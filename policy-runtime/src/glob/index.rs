//! An index of a large glob list by literal prefix.
//!
//! A glob can only match a path that starts with the glob's leading literal components
//! (`/srv/agent/project-7` for `/srv/agent/project-7/**`). The index maps each such prefix to
//! the globs that have it, so matching a path looks up each of the path's own prefixes (`/`,
//! `/srv`, `/srv/agent`, ...) and tries only the globs found there. A policy of thousands of
//! per-project globs is then matched in a handful of lookups, whatever its size.

use std::collections::HashMap;

use super::{Component, Glob};

/// Glob indices (into the list) keyed by literal prefix (`/` when the glob has none).
#[derive(Clone, Debug)]
pub(super) struct PrefixIndex {
    by_prefix: HashMap<String, Vec<usize>>,
}

impl PrefixIndex {
    pub(super) fn new(globs: &[Glob]) -> PrefixIndex {
        let mut by_prefix: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, glob) in globs.iter().enumerate() {
            by_prefix.entry(literal_prefix(glob)).or_default().push(i);
        }
        PrefixIndex { by_prefix }
    }

    /// The first glob, in declaration order, that matches `path`.
    pub(super) fn first_match<'g>(&self, globs: &'g [Glob], path: &str) -> Option<&'g Glob> {
        let mut best: Option<usize> = None;
        let mut consider = |prefix: &str| {
            for &i in self.by_prefix.get(prefix).into_iter().flatten() {
                if best.is_some_and(|b| b < i) {
                    break;
                }
                if globs[i].is_match(path) {
                    best = Some(i);
                    break;
                }
            }
        };
        consider("/");
        if path.len() > 1 {
            for (i, _) in path.match_indices('/').skip(1) {
                consider(&path[..i]);
            }
            consider(path);
        }
        best.map(|i| &globs[i])
    }
}

/// The leading literal components of `glob`, as a path (`/` when there are none).
fn literal_prefix(glob: &Glob) -> String {
    let mut prefix = String::new();
    for component in glob.components() {
        match component {
            Component::Pattern(_) => match component.as_literal() {
                Some(literal) => {
                    prefix.push('/');
                    prefix.push_str(&literal);
                }
                None => break,
            },
            Component::Recursive => break,
        }
    }
    if prefix.is_empty() {
        prefix.push('/');
    }
    prefix
}
