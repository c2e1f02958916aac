//! `fs.read` and `fs.write`: glob sets compared by language inclusion.
//!
//! The sets are those the in-process gate enforces ([`policy_runtime::reference::policy`], `policy_runtime::gate`):
//!
//! * when neither `fs.read` nor `fs.write` is declared, the gate does nothing: every path may be
//!   read and written (the universe). So declaring no `fs` at all after declaring some is a
//!   widening, and its witness is a path the old globs did not admit;
//! * once either is declared, an unspecified list counts as empty;
//! * writing implies reading: the readable set is `fs.read ∪ fs.write`.

use std::collections::HashMap;
use std::sync::Arc;

use policy_runtime::glob::{Component, Glob, GlobList, Token};
use policy_runtime::policy::{FsPolicy, ToolPolicy};

use crate::findings::{Code, Finding};
use crate::inclusion::{find_witness, Budget, Language, Term, Undecided, WitnessOrder};

/// The paths one side of a tool may touch for one operation.
#[derive(Clone, Debug)]
pub enum PathSet<'a> {
    /// Unspecified: every path.
    Universe,
    /// Declared globs, sorted by text and deduplicated (so reordering and duplicates compare
    /// equal without automata).
    Globs(Vec<&'a Glob>),
}

impl<'a> PathSet<'a> {
    /// The union of the given lists; any unspecified list makes the union the universe.
    pub fn union<'l>(lists: impl IntoIterator<Item = Option<&'a [Glob]>>) -> PathSet<'a> {
        let mut globs = Vec::new();
        for list in lists {
            match list {
                None => return PathSet::Universe,
                Some(list) => globs.extend(list.iter()),
            }
        }
        globs.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        globs.dedup_by(|a, b| a.as_str() == b.as_str());
        PathSet::Globs(globs)
    }

    /// The paths a tool may write: `fs.write`, every path when `fs` is unspecified.
    pub fn writable(fs: &'a FsPolicy) -> PathSet<'a> {
        if fs.is_unspecified() {
            return PathSet::Universe;
        }
        PathSet::union([Some(declared(&fs.write))])
    }

    /// The paths a tool may read: `fs.read ∪ fs.write`, every path when `fs` is unspecified.
    pub fn readable(fs: &'a FsPolicy) -> PathSet<'a> {
        if fs.is_unspecified() {
            return PathSet::Universe;
        }
        PathSet::union([Some(declared(&fs.read)), Some(declared(&fs.write))])
    }

    /// Whether every glob of `self` also appears, as text, in `other` (so `self ⊆ other`
    /// without automata).
    fn textually_within(&self, other: &PathSet<'_>) -> bool {
        match (self, other) {
            (_, PathSet::Universe) => true,
            (PathSet::Universe, PathSet::Globs(_)) => false,
            (PathSet::Globs(a), PathSet::Globs(b)) => a
                .iter()
                .all(|g| b.binary_search_by(|x| x.as_str().cmp(g.as_str())).is_ok()),
        }
    }

    /// The first glob (in sorted order) that admits `path`, for explanations.
    pub fn explain(&self, path: &str) -> Option<&'a Glob> {
        match self {
            PathSet::Universe => None,
            PathSet::Globs(globs) => globs.iter().copied().find(|g| g.is_match(path)),
        }
    }
}

/// The globs of a list; an unspecified list counts as empty once the gate is active.
fn declared(list: &Option<GlobList>) -> &[Glob] {
    list.as_ref().map_or(&[], |l| l.globs())
}

/// Compiled glob sets, keyed by their sorted, deduplicated globs, and the answers of
/// witness searches between residuals (see [`path_witness`]), keyed by their regexes. Many
/// tools share globs, or globs that differ only in their leading directories, so a set is
/// compiled and a question answered once and reused; each table holds at most
/// [`GlobCache::CAPACITY`] entries and starts over when full, so memory stays flat however
/// many tools a manifest has.
#[derive(Debug, Default)]
pub struct GlobCache {
    languages: HashMap<Vec<Glob>, Arc<Result<Language, Undecided>>>,
    residuals: HashMap<Vec<String>, Arc<Result<Language, Undecided>>>,
    answers: HashMap<Question, Option<String>>,
}

/// One witness search between residuals: admitted regexes, rejected regexes, and whether the
/// empty string is the root (no prefix was read) and so comes last.
type Question = (Vec<String>, Vec<String>, bool);

impl GlobCache {
    /// The most compiled sets (and, separately, answers) kept at once.
    pub const CAPACITY: usize = 2_048;
}

impl GlobCache {
    /// The language of a declared glob set (`None` for the universe).
    pub fn language(&mut self, set: &PathSet<'_>) -> Option<Arc<Result<Language, Undecided>>> {
        let PathSet::Globs(globs) = set else {
            return None;
        };
        // Globs are interned, so the key is a list of shared references, not of texts.
        let key: Vec<Glob> = globs.iter().map(|&g| g.clone()).collect();
        if let Some(hit) = self.languages.get(&key) {
            return Some(Arc::clone(hit));
        }
        let regexes: Vec<String> = globs.iter().map(|g| g.to_regex()).collect();
        let lang = Arc::new(Language::from_regexes(&regexes));
        Some(remember(&mut self.languages, key, lang))
    }

    /// The language of a union of residual regexes (sorted, distinct).
    fn residual(&mut self, regexes: &[String]) -> Arc<Result<Language, Undecided>> {
        if let Some(hit) = self.residuals.get(regexes) {
            return Arc::clone(hit);
        }
        let lang = Arc::new(Language::from_regexes(regexes));
        remember(&mut self.residuals, regexes.to_vec(), lang)
    }

    /// How many compiled sets the cache holds.
    pub fn len(&self) -> usize {
        self.languages.len() + self.residuals.len()
    }

    /// Whether nothing has been compiled yet.
    pub fn is_empty(&self) -> bool {
        self.languages.is_empty() && self.residuals.is_empty()
    }
}

/// Keeps `value` under `key` in one of the cache's tables (emptied first when full, so it
/// never holds more than [`GlobCache::CAPACITY`]) and returns it.
fn remember<K: std::hash::Hash + Eq, V: Clone>(table: &mut HashMap<K, V>, key: K, value: V) -> V {
    if table.len() >= GlobCache::CAPACITY {
        table.clear();
    }
    table.insert(key, value.clone());
    value
}

/// The parts of `admitted` and `rejected` that decide `admitted \ rejected`: the admitted globs
/// not already inside one rejected glob ([`Glob::covers`]), and the rejected globs that may
/// meet one of those ([`Glob::may_overlap`]). The difference of the two results is the same
/// set of paths as that of the full sets, so the witness search over them finds the same
/// witness, with smaller automata to build and walk.
fn relevant<'a, 'b>(admitted: &PathSet<'a>, rejected: &PathSet<'b>) -> (PathSet<'a>, PathSet<'b>) {
    let (PathSet::Globs(admitted), PathSet::Globs(rejected)) = (admitted, rejected) else {
        return (admitted.clone(), rejected.clone());
    };
    let admitted: Vec<&Glob> = admitted
        .iter()
        .copied()
        .filter(|g| !rejected.iter().any(|r| r == g || r.covers(g)))
        .collect();
    let rejected: Vec<&Glob> = rejected
        .iter()
        .copied()
        .filter(|r| admitted.iter().any(|g| r.may_overlap(g)))
        .collect();
    (PathSet::Globs(admitted), PathSet::Globs(rejected))
}

/// A normalized path that `admitted` admits and `rejected` does not (`Ok(None)`: none exists,
/// so `admitted ⊆ rejected`). The root is returned as `/`.
///
/// The witness is the least such path, shorter first, then by [`WitnessOrder::Paths`]; it
/// does not depend on how the question is split. The admitted globs are grouped by their
/// leading components before any `**`, and each group reads off as much of them as leaves
/// every residual ([`Glob::residual_after`]) decided: a literal component as written, a
/// pattern such as `*` as its least text, since whichever text it stands for, the question
/// after it is the same. Every path of the group is such a prefix followed by a path, so its
/// least witness is the least prefix followed by the least witness of the residuals, and the
/// least over the groups is the answer. Tools whose globs differ only in their leading
/// directories ask the same residual question, compiled and answered once per [`GlobCache`].
/// [`whole_path_witness`] asks the question in one search; a property test holds both to the
/// same answers.
///
/// ```
/// use manifest_verify::fs::{path_witness, GlobCache, PathSet};
/// use manifest_verify::inclusion::Budget;
/// use policy_runtime::GlobList;
///
/// let old = GlobList::new(["/out/**"]).unwrap();
/// let new = GlobList::new(["/out/sub/**", "/tmp/*.log"]).unwrap();
/// let (old, new) = (PathSet::union([Some(old.globs())]), PathSet::union([Some(new.globs())]));
/// let (mut cache, budget) = (GlobCache::default(), Budget::per_tool());
/// assert_eq!(path_witness(&mut cache, &new, &old, &budget).unwrap().as_deref(), Some("/tmp/.log"));
/// assert_eq!(path_witness(&mut cache, &old, &PathSet::Universe, &budget).unwrap(), None);
/// ```
pub fn path_witness(
    cache: &mut GlobCache,
    admitted: &PathSet<'_>,
    rejected: &PathSet<'_>,
    budget: &Budget,
) -> Result<Option<String>, Undecided> {
    let Some((admitted, rejected)) = to_search(admitted, rejected) else {
        return Ok(None);
    };
    let (PathSet::Globs(admitted_globs), PathSet::Globs(rejected_globs)) = (&admitted, &rejected)
    else {
        return whole_search(cache, &admitted, &rejected, budget);
    };
    let mut best: Option<String> = None;
    for (key, group) in groups(admitted_globs) {
        let Some(witness) = group_witness(cache, &key, &group, rejected_globs, budget)? else {
            continue;
        };
        if best
            .as_ref()
            .is_none_or(|b| WitnessOrder::Paths.compare(&witness, b).is_lt())
        {
            best = Some(witness);
        }
    }
    Ok(best.map(|w| root_as_slash(&w)))
}

/// The most groups [`path_witness`] searches one by one; past it, one group of the leading
/// components all admitted globs share (the same answer, from larger automata).
const MAX_GROUPS: usize = 16;

/// The most leading components a group reads off: the work of a residual is the glob's
/// length times the prefix's, and directories deeper than this are rare.
const MAX_PREFIX: usize = 32;

/// The admitted globs grouped by their leading components before any `**` (at most
/// [`MAX_PREFIX`]: each group's key), in a stable order.
fn groups<'a>(globs: &[&'a Glob]) -> Vec<(Vec<&'a Component>, Vec<&'a Glob>)> {
    let key = |g: &'a Glob| -> Vec<&'a Component> {
        g.components()
            .iter()
            .take_while(|c| !matches!(c, Component::Recursive))
            .take(MAX_PREFIX)
            .collect()
    };
    let mut groups: Vec<(Vec<&'a Component>, Vec<&'a Glob>)> = Vec::new();
    for &g in globs {
        let own = key(g);
        match groups.iter_mut().find(|(k, _)| *k == own) {
            Some((_, members)) => members.push(g),
            None => groups.push((own, vec![g])),
        }
    }
    if groups.len() <= MAX_GROUPS {
        return groups;
    }
    let mut shared = groups[0].0.clone();
    for (k, _) in &groups[1..] {
        let same = shared.iter().zip(k).take_while(|(a, b)| a == b).count();
        shared.truncate(same);
    }
    vec![(shared, globs.to_vec())]
}

/// The least witness among the paths of one group of admitted globs, which all begin with the
/// components `key`: the longest part of `key` after which every residual is decided is read
/// off (a literal component as written, a pattern as its least text: whichever text it stands
/// for, what follows is the same question), and only what follows is searched.
fn group_witness(
    cache: &mut GlobCache,
    key: &[&Component],
    group: &[&Glob],
    rejected: &[&Glob],
    budget: &Budget,
) -> Result<Option<String>, Undecided> {
    let mut depth = key.len();
    let (admitted, rejected) = loop {
        let prefix = &key[..depth];
        match (residuals(group, prefix), residuals(rejected, prefix)) {
            (Ok(a), Ok(r)) => break (a, r),
            (Err(i), _) | (_, Err(i)) => depth = i,
        }
    };
    let mut prefix = String::new();
    for component in &key[..depth] {
        let text = match component.as_literal() {
            Some(text) => text,
            None => match least_text(cache, component, budget)? {
                Some(text) => text,
                // No valid path component spells the pattern: the group admits no path.
                None => return Ok(None),
            },
        };
        prefix.push('/');
        prefix.push_str(&text);
    }
    let tail = answer(cache, (admitted, rejected, depth == 0), budget)?;
    Ok(tail.map(|tail| prefix + &tail))
}

/// The union of the globs' residuals after `prefix` (sorted, distinct), or the first prefix
/// component after which one of them is undecided.
fn residuals(globs: &[&Glob], prefix: &[&Component]) -> Result<Vec<String>, usize> {
    let mut regexes = Vec::new();
    for g in globs {
        regexes.extend(g.residual_after(prefix)?);
    }
    regexes.sort();
    regexes.dedup();
    Ok(regexes)
}

/// The least valid path component (shorter first, then by [`WitnessOrder::Paths`]) that a
/// pattern component spells, if any.
fn least_text(
    cache: &mut GlobCache,
    component: &Component,
    budget: &Budget,
) -> Result<Option<String>, Undecided> {
    // Literals, `?` and `*` alone: each `?` is its least character and each `*` empty, as
    // long as that spells a valid component (not empty, `.` or `..`); otherwise the automaton
    // decides.
    let Component::Pattern(tokens) = component else {
        return Ok(None);
    };
    let simple: Option<String> = tokens
        .iter()
        .filter_map(|t| match t {
            Token::Literal(c) => Some(Some(*c)),
            Token::Question => Some(Some(LEAST_CHAR)),
            Token::Star => None,
            _ => Some(None),
        })
        .collect();
    if let Some(text) = simple.filter(|t| !matches!(t.as_str(), "" | "." | "..")) {
        return Ok(Some(text));
    }
    let question = (vec![component.to_regex()], Vec::new(), false);
    let path = answer(cache, question, budget)?;
    Ok(path.map(|p| p.strip_prefix('/').unwrap_or(&p).to_string()))
}

/// The first character of [`WitnessOrder::Paths`], which any `?` may spell.
const LEAST_CHAR: char = 'a';

/// The least path in the residual `admitted` and not in `rejected` (the empty string is the
/// prefix itself, or the root when the question has no prefix), from the cache when it was
/// asked before. Undecided answers are not kept: they depend on the budget left.
fn answer(
    cache: &mut GlobCache,
    question: Question,
    budget: &Budget,
) -> Result<Option<String>, Undecided> {
    if let Some(hit) = cache.answers.get(&question) {
        return Ok(hit.clone());
    }
    let (admitted, rejected, root_last) = &question;
    if admitted.is_empty() {
        return Ok(None);
    }
    let a = cache.residual(admitted);
    let r = (!rejected.is_empty()).then(|| cache.residual(rejected));
    let mut terms = vec![
        Term::member(Language::paths()),
        Term::member(a.as_ref().as_ref().map_err(Clone::clone)?),
    ];
    if let Some(r) = &r {
        terms.push(Term::non_member(r.as_ref().as_ref().map_err(Clone::clone)?));
    }
    let order = if *root_last {
        WitnessOrder::Paths
    } else {
        WitnessOrder::PathTails
    };
    let found = find_witness(&terms, order, budget)?;
    Ok(remember(&mut cache.answers, question, found))
}

/// [`path_witness`] in one search of the whole sets' automata: the reference its grouped
/// searches are tested against, and the search for an unspecified side.
pub fn whole_path_witness(
    cache: &mut GlobCache,
    admitted: &PathSet<'_>,
    rejected: &PathSet<'_>,
    budget: &Budget,
) -> Result<Option<String>, Undecided> {
    match to_search(admitted, rejected) {
        Some((admitted, rejected)) => whole_search(cache, &admitted, &rejected, budget),
        None => Ok(None),
    }
}

/// What is left to search for a path `admitted` has and `rejected` lacks: `None` when the text
/// alone shows there is none, else the globs that can matter ([`relevant`]).
fn to_search<'a, 'b>(
    admitted: &PathSet<'a>,
    rejected: &PathSet<'b>,
) -> Option<(PathSet<'a>, PathSet<'b>)> {
    if admitted.textually_within(rejected) {
        return None;
    }
    Some(relevant(admitted, rejected))
}

/// The one search of [`whole_path_witness`], on sets [`to_search`] already narrowed.
fn whole_search(
    cache: &mut GlobCache,
    admitted: &PathSet<'_>,
    rejected: &PathSet<'_>,
    budget: &Budget,
) -> Result<Option<String>, Undecided> {
    if matches!(admitted, PathSet::Globs(globs) if globs.is_empty()) {
        return Ok(None);
    }
    let a = cache.language(admitted);
    let r = cache.language(rejected);
    let mut terms = vec![Term::member(Language::paths())];
    if let Some(a) = &a {
        terms.push(Term::member(a.as_ref().as_ref().map_err(Clone::clone)?));
    }
    if let Some(r) = &r {
        terms.push(Term::non_member(r.as_ref().as_ref().map_err(Clone::clone)?));
    }
    Ok(find_witness(&terms, WitnessOrder::Paths, budget)?.map(|w| root_as_slash(&w)))
}

fn root_as_slash(w: &str) -> String {
    if w.is_empty() {
        "/".to_string()
    } else {
        w.to_string()
    }
}

/// Which fs operation a comparison is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// `fs.read ∪ fs.write`.
    Read,
    /// `fs.write`.
    Write,
}

/// Widening and narrowing findings of one operation, within the tool's `budget`.
///
/// A widening that cannot be decided within the budget is reported as an undecided widening
/// (fail closed) without a witness; a narrowing that cannot be decided is not reported.
pub fn diff(
    cache: &mut GlobCache,
    tool: &str,
    op: Operation,
    old: &ToolPolicy,
    new: &ToolPolicy,
    budget: &Budget,
) -> Vec<Finding> {
    let (old_set, new_set, part, widened, narrowed) = match op {
        Operation::Read => (
            PathSet::readable(&old.fs),
            PathSet::readable(&new.fs),
            "fs.read",
            Code::FsReadWidened,
            Code::FsReadNarrowed,
        ),
        Operation::Write => (
            PathSet::writable(&old.fs),
            PathSet::writable(&new.fs),
            "fs.write",
            Code::FsWriteWidened,
            Code::FsWriteNarrowed,
        ),
    };
    // The sides' texts, written only for a finding (most comparisons make none).
    let text = |fs: &FsPolicy| match op {
        Operation::Read => fs_text(fs),
        Operation::Write => fs.write.as_ref().map(json),
    };
    let verb = if op == Operation::Read {
        "read"
    } else {
        "write"
    };
    let mut out = Vec::new();
    let make = |code, message: String, witness: Option<String>| Finding {
        code,
        tool: tool.to_string(),
        path: format!("tools.{tool}.{part}"),
        message,
        witness,
        old: text(&old.fs),
        new: text(&new.fs),
    };
    match path_witness(cache, &new_set, &old_set, budget) {
        Ok(Some(w)) => {
            let why = match new_set.explain(&w) {
                Some(g) => format!("admitted by `{g}`"),
                None => "fs is now unspecified, which admits every path".to_string(),
            };
            out.push(make(
                widened,
                format!(
                    "`{tool}` may now {verb} `{w}` ({why}), which the old policy did not allow"
                ),
                Some(w),
            ));
        }
        Ok(None) => {}
        Err(e) => out.push(make(
            widened,
            format!(
                "undecided: whether {part} of `{tool}` was widened could not be decided within the verifier's budget ({e}); treated as widened (fail closed)"
            ),
            None,
        )),
    }
    if let Ok(Some(w)) = path_witness(cache, &old_set, &new_set, budget) {
        out.push(make(
            narrowed,
            format!("`{tool}` may no longer {verb} `{w}`"),
            Some(w),
        ));
    }
    out
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("policy parts serialize")
}

fn fs_text(fs: &FsPolicy) -> Option<String> {
    (!fs.is_unspecified()).then(|| json(fs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_runtime::GlobList;

    /// Tools whose globs differ only in their leading directories (a literal one, or a
    /// pattern of their own) ask one residual question: compiled and answered once.
    #[test]
    fn leading_directories_share_one_question() {
        let budget = Budget::new(std::time::Duration::from_secs(600));
        let mut cache = GlobCache::default();
        let mut compiled = Vec::new();
        for own in ["/u1", "/u2", "/team/x?", "/team/y*"] {
            let new = GlobList::new([format!("{own}/srv/**")]).unwrap();
            let old = GlobList::new([format!("{own}/srv/*.log")]).unwrap();
            let (new, old) = (
                PathSet::union([Some(new.globs())]),
                PathSet::union([Some(old.globs())]),
            );
            let w = path_witness(&mut cache, &new, &old, &budget).unwrap();
            let least = own.replace('?', "a").replace('*', "");
            assert_eq!(w, Some(format!("{least}/srv")));
            compiled.push(cache.len());
        }
        // The first question compiled its two residuals; the others reused them.
        assert_eq!(compiled, [2, 2, 2, 2]);
        assert_eq!(cache.answers.len(), 1);
    }

    /// Globs deeper than [`MAX_PREFIX`] components: a group reads off only that many, and the
    /// witness is still the whole search's.
    #[test]
    fn deep_globs_read_off_a_bounded_prefix() {
        let deep = "/d".repeat(4 * MAX_PREFIX);
        let new: Vec<String> = (0..20).map(|i| format!("{deep}/x{i}/**")).collect();
        let old: Vec<String> = (0..20).map(|i| format!("{deep}/x{i}/*.log")).collect();
        let (new, old) = (GlobList::new(&new).unwrap(), GlobList::new(&old).unwrap());
        let (new, old) = (
            PathSet::union([Some(new.globs())]),
            PathSet::union([Some(old.globs())]),
        );
        let PathSet::Globs(globs) = &new else {
            unreachable!()
        };
        assert!(groups(globs).iter().all(|(key, _)| key.len() == MAX_PREFIX));
        // A budget far beyond these globs: the answer, not the clock, is under test.
        let budget = Budget::new(std::time::Duration::from_secs(600));
        let grouped = path_witness(&mut GlobCache::default(), &new, &old, &budget);
        let whole = whole_path_witness(&mut GlobCache::default(), &new, &old, &budget);
        assert_eq!(grouped, Ok(Some(format!("{deep}/x0"))));
        assert_eq!(grouped, whole);
    }

    /// Past [`MAX_GROUPS`] prefixes the admitted globs are searched as one group under their
    /// shared directories; the witness is still the whole search's.
    #[test]
    fn many_prefixes_are_searched_as_one_group() {
        let budget = Budget::new(std::time::Duration::from_secs(600));
        let new: Vec<String> = (0..MAX_GROUPS + 4)
            .map(|i| format!("/srv/team{i}/{}", if i % 2 == 0 { "**" } else { "*.log" }))
            .collect();
        let old = ["/srv/team1/**", "/srv/team2/x", "/srv/zz"];
        let (new, old) = (GlobList::new(&new).unwrap(), GlobList::new(old).unwrap());
        fn set(l: &GlobList) -> PathSet<'_> {
            PathSet::union([Some(l.globs())])
        }
        let (new, old) = (set(&new), set(&old));
        let PathSet::Globs(globs) = &new else {
            unreachable!()
        };
        let one = groups(globs);
        assert_eq!(one.len(), 1);
        // The one component they share: `srv`.
        assert_eq!(
            one[0].0,
            globs[0].components()[..1].iter().collect::<Vec<_>>()
        );
        for (a, r, expected) in [(&new, &old, "/srv/team0"), (&old, &new, "/srv/zz")] {
            let grouped = path_witness(&mut GlobCache::default(), a, r, &budget).unwrap();
            let whole = whole_path_witness(&mut GlobCache::default(), a, r, &budget).unwrap();
            assert_eq!(grouped, whole);
            assert_eq!(grouped.as_deref(), Some(expected));
        }
    }
}
