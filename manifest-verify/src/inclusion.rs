//! Exact language inclusion between regular languages, with a shortest witness.
//!
//! Every language here is a union of anchored regular expressions (the globs of one side of a
//! tool, host-free env patterns, the escalation targets), compiled once into an NFA whose DFA
//! states are built lazily, as a search visits them. The
//! question "is there a string that is in A and B but not in C?" is answered by a breadth-first
//! search of the product automaton, which also yields the shortest such string: the witness.
//!
//! ```
//! use manifest_verify::inclusion::{find_witness, Budget, Language, Term, WitnessOrder};
//!
//! let new = Language::from_regexes(&["^/out(?:/[^/]+)*$"]).unwrap();
//! let old = Language::from_regexes(&["^/out/[^/]*$"]).unwrap();
//! let universe = Language::paths();
//! let witness = find_witness(
//!     &[Term::member(universe), Term::member(&new), Term::non_member(&old)],
//!     WitnessOrder::Paths,
//!     &Budget::per_tool(),
//! )
//! .unwrap();
//! // `/out/**` admits `/out` itself, which `/out/*` does not.
//! assert_eq!(witness.as_deref(), Some("/out"));
//! ```

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::hybrid::LazyStateID;
use regex_automata::nfa::thompson;
use regex_automata::util::start;
use regex_automata::{Anchored, MatchKind};

/// The most memory one language's automaton may use during one search. States are built
/// lazily, only those a search visits; a search that needs more stops as undecided.
pub const STATE_MEMORY_LIMIT: usize = 16 << 20;

/// The product search gives up past this many states (undecided, fail closed).
pub const PRODUCT_STATE_LIMIT: usize = 1_000_000;

/// The time one tool's comparison may take, all its searches together (see [`Budget`]).
pub const TOOL_TIME_LIMIT: Duration = Duration::from_millis(250);

/// The work one tool's comparison may do: a deadline ([`TOOL_TIME_LIMIT`] by default), and per
/// search at most [`PRODUCT_STATE_LIMIT`] product states and [`STATE_MEMORY_LIMIT`] bytes of
/// automaton per language. A search that hits any of them returns [`Undecided`], which the
/// verifier reports as "undecided" and counts as a widening (fail closed).
///
/// ```
/// use std::time::Duration;
/// use manifest_verify::inclusion::Budget;
/// let budget = Budget::new(Duration::from_millis(10));
/// assert!(budget.check().is_ok());
/// std::thread::sleep(Duration::from_millis(20));
/// assert!(budget.check().unwrap_err().to_string().contains("budget"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    limit: Duration,
    deadline: Instant,
}

impl Budget {
    /// A budget of `limit` from now.
    pub fn new(limit: Duration) -> Budget {
        Budget {
            limit,
            deadline: Instant::now() + limit,
        }
    }

    /// The budget of one tool: [`TOOL_TIME_LIMIT`] from now.
    pub fn per_tool() -> Budget {
        Budget::new(TOOL_TIME_LIMIT)
    }

    /// `Err` once the deadline has passed.
    pub fn check(&self) -> Result<(), Undecided> {
        if Instant::now() > self.deadline {
            return Err(Undecided(format!(
                "the comparison hit the verifier's time budget of {} ms per tool",
                self.limit.as_millis()
            )));
        }
        Ok(())
    }
}

/// A regular language compiled to a lazy DFA (or the empty language).
///
/// The DFA states that searches build are kept in the language's cache, so the many searches
/// against a shared language (the path universe, a glob set used by many tools) build each
/// state once. A cache past half of [`STATE_MEMORY_LIMIT`] is emptied before a search starts,
/// so every search has at least half of it.
#[derive(Debug)]
pub struct Language {
    dfa: Option<DFA>,
    cache: Option<Mutex<Cache>>,
}

impl Clone for Language {
    fn clone(&self) -> Language {
        Language {
            dfa: self.dfa.clone(),
            cache: self.dfa.as_ref().map(|d| Mutex::new(d.create_cache())),
        }
    }
}

/// The languages could not be compared within the [`Budget`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Undecided(pub String);

impl Language {
    /// The empty language: matches nothing.
    pub fn empty() -> Language {
        Language {
            dfa: None,
            cache: None,
        }
    }

    /// The union of anchored regexes (regex-syntax dialect, Unicode mode, UTF-8 only).
    ///
    /// Compiling builds only the NFA; DFA states are built during searches, as they are
    /// visited.
    ///
    /// ```
    /// use manifest_verify::inclusion::Language;
    /// let l = Language::from_regexes(&["^a$", "^b+$"]).unwrap();
    /// assert!(l.is_match("bbb"));
    /// assert!(!l.is_match("ab"));
    /// ```
    pub fn from_regexes<S: AsRef<str>>(regexes: &[S]) -> Result<Language, Undecided> {
        if regexes.is_empty() {
            return Ok(Language::empty());
        }
        // One compiler per thread, reused: it keeps its scratch tables (among them a
        // 10,000-entry map for Unicode classes) between languages instead of allocating them
        // for every glob set, as a fresh compiler (or regex-automata's own builder, which
        // clones one) would.
        thread_local! {
            static COMPILER: thompson::Compiler = {
                let mut compiler = thompson::Compiler::new();
                compiler.configure(
                    thompson::Config::new().which_captures(thompson::WhichCaptures::None),
                );
                compiler
            };
            static BUILDER: regex_automata::hybrid::dfa::Builder = {
                let mut builder = DFA::builder();
                builder.configure(
                    DFA::config()
                        .match_kind(MatchKind::All)
                        .starts_for_each_pattern(false)
                        .cache_capacity(STATE_MEMORY_LIMIT)
                        .skip_cache_capacity_check(true)
                        .minimum_cache_clear_count(None),
                );
                builder
            };
        }
        let too_large = |e: &dyn std::fmt::Display| {
            Undecided(format!("the globs are too large to compile: {e}"))
        };
        let nfa =
            COMPILER.with(|compiler| compiler.build_many(regexes).map_err(|e| too_large(&e)))?;
        let dfa = BUILDER.with(|builder| builder.build_from_nfa(nfa).map_err(|e| too_large(&e)))?;
        Ok(Language {
            cache: Some(Mutex::new(dfa.create_cache())),
            dfa: Some(dfa),
        })
    }

    /// Normalized absolute paths, with the root `/` spelled as the empty string (the convention
    /// of [`policy_runtime::Glob::to_regex`]): components are non-empty, never `.` or `..`, and
    /// contain neither `/` nor NUL. Every path witness is drawn from this language, so a witness
    /// is always a path the gate could really be asked about.
    pub fn paths() -> &'static Language {
        static PATHS: OnceLock<Language> = OnceLock::new();
        PATHS.get_or_init(|| {
            Language::from_regexes(&[
                r"^(?:/(?:[^/\x00.][^/\x00]*|\.[^/\x00.][^/\x00]*|\.\.[^/\x00]+))*$",
            ])
            .expect("the path universe compiles")
        })
    }

    /// Whether `text` is in the language (for tests and explanations).
    pub fn is_match(&self, text: &str) -> bool {
        let mut walker = match Walker::new(self) {
            Ok(w) => w,
            Err(_) => return false,
        };
        let mut s = walker.start;
        for &b in text.as_bytes() {
            match walker.next(s, b) {
                Ok(next) => s = next,
                Err(_) => return false,
            }
        }
        walker.accepts(s).unwrap_or(false)
    }

    /// Whether the language is empty.
    pub fn is_empty(&self) -> bool {
        self.dfa.is_none()
    }
}

/// One language's lazy DFA and its cache, held for one search. A cache that is cleared during
/// the search invalidates the state IDs the search holds, so a clear (the cache is full) ends
/// the search as undecided.
struct Walker<'a> {
    dfa: &'a DFA,
    cache: CacheSlot<'a>,
    clears: usize,
    start: LazyStateID,
}

/// The language's own cache, or a fresh one when it is already held (the same language in two
/// terms of one search).
enum CacheSlot<'a> {
    Shared(MutexGuard<'a, Cache>),
    Own(Box<Cache>),
}

impl CacheSlot<'_> {
    fn get(&mut self) -> &mut Cache {
        match self {
            CacheSlot::Shared(guard) => guard,
            CacheSlot::Own(cache) => cache,
        }
    }
}

impl<'a> Walker<'a> {
    /// `Err` for the empty language, which has no automaton to walk.
    fn new(language: &'a Language) -> Result<Walker<'a>, Undecided> {
        let (Some(dfa), Some(shared)) = (&language.dfa, &language.cache) else {
            return Err(Undecided("the empty language has no automaton".into()));
        };
        let mut cache = match shared.try_lock() {
            Ok(guard) => CacheSlot::Shared(guard),
            // A panic elsewhere cannot leave a cache wrong for us: start from a fresh one.
            Err(_) => CacheSlot::Own(Box::new(dfa.create_cache())),
        };
        if cache.get().memory_usage() > STATE_MEMORY_LIMIT / 2 {
            cache.get().reset(dfa);
        }
        let clears = cache.get().clear_count();
        let start = dfa
            .start_state(cache.get(), &start::Config::new().anchored(Anchored::Yes))
            .map_err(|e| Undecided(e.to_string()))?;
        Ok(Walker {
            dfa,
            cache,
            clears,
            start,
        })
    }

    fn next(&mut self, s: LazyStateID, b: u8) -> Result<LazyStateID, Undecided> {
        let cache = self.cache.get();
        let next = self.dfa.next_state(cache, s, b).map_err(full)?;
        if cache.clear_count() != self.clears {
            return Err(full(()));
        }
        Ok(next)
    }

    fn accepts(&mut self, s: LazyStateID) -> Result<bool, Undecided> {
        let cache = self.cache.get();
        let eoi = self.dfa.next_eoi_state(cache, s).map_err(full)?;
        if cache.clear_count() != self.clears {
            return Err(full(()));
        }
        Ok(eoi.is_match())
    }
}

fn full<E>(_: E) -> Undecided {
    Undecided(format!(
        "the automaton of one side needs more than the verifier's {} MiB of states per search",
        STATE_MEMORY_LIMIT >> 20
    ))
}

/// One condition of a witness search: the witness must be in `language` (`member`) or not.
#[derive(Clone, Copy, Debug)]
pub struct Term<'a> {
    language: &'a Language,
    member: bool,
}

impl<'a> Term<'a> {
    /// The witness must be in `language`.
    pub fn member(language: &'a Language) -> Term<'a> {
        Term {
            language,
            member: true,
        }
    }

    /// The witness must not be in `language`.
    pub fn non_member(language: &'a Language) -> Term<'a> {
        Term {
            language,
            member: false,
        }
    }
}

/// The order in which bytes are tried, which decides among witnesses of the same length:
/// the most readable characters first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WitnessOrder {
    /// Lowercase letters, digits, then the rest of printable ASCII; never the root unless it
    /// is the only witness (a path like `/a` says more than `/`).
    Paths,
    /// Uppercase letters, `_`, digits first, as in environment variable names.
    EnvNames,
    /// The order of [`WitnessOrder::Paths`] for what follows a non-empty path prefix: the
    /// empty string is then the prefix itself, an ordinary (and the shortest) candidate.
    PathTails,
}

impl WitnessOrder {
    fn bytes(self) -> &'static [u8; 256] {
        static PATHS: OnceLock<[u8; 256]> = OnceLock::new();
        static ENV: OnceLock<[u8; 256]> = OnceLock::new();
        let (cell, groups): (_, &[&[u8]]) = match self {
            WitnessOrder::Paths | WitnessOrder::PathTails => (
                &PATHS,
                &[
                    b"abcdefghijklmnopqrstuvwxyz",
                    b"0123456789",
                    b"/._-",
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                ],
            ),
            WitnessOrder::EnvNames => (
                &ENV,
                &[
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                    b"_",
                    b"0123456789",
                    b"abcdefghijklmnopqrstuvwxyz",
                ],
            ),
        };
        cell.get_or_init(|| {
            let mut order = Vec::with_capacity(256);
            order.extend(groups.iter().flat_map(|g| g.iter().copied()));
            let rest: Vec<u8> = (0x20u8..0x7f).filter(|b| !order.contains(b)).collect();
            order.extend(rest);
            order.extend((0x80u8..=0xff).chain(0x00..0x20).chain([0x7f]));
            order.try_into().expect("a permutation of all bytes")
        })
    }

    fn root_last(self) -> bool {
        self == WitnessOrder::Paths
    }

    /// The order in which [`find_witness`] prefers witnesses: shorter first, then byte by byte
    /// in this order's preference (the root last, for [`WitnessOrder::Paths`]). The least of
    /// several searches' witnesses is the witness of the union of their questions.
    ///
    /// ```
    /// use std::cmp::Ordering;
    /// use manifest_verify::inclusion::WitnessOrder;
    /// let order = WitnessOrder::Paths;
    /// assert_eq!(order.compare("/b", "/aa"), Ordering::Less);
    /// assert_eq!(order.compare("/a", "/B"), Ordering::Less);
    /// assert_eq!(order.compare("/a", ""), Ordering::Less);
    /// ```
    pub fn compare(self, a: &str, b: &str) -> std::cmp::Ordering {
        if self.root_last() && (a.is_empty() || b.is_empty()) {
            return a.is_empty().cmp(&b.is_empty());
        }
        let rank = self.ranks();
        a.len().cmp(&b.len()).then_with(|| {
            let key = |s: &str| s.bytes().map(|b| rank[usize::from(b)]).collect::<Vec<u8>>();
            key(a).cmp(&key(b))
        })
    }

    /// Each byte's position in [`WitnessOrder::bytes`].
    fn ranks(self) -> [u8; 256] {
        let mut rank = [0u8; 256];
        for (i, &b) in self.bytes().iter().enumerate() {
            rank[usize::from(b)] = i as u8;
        }
        rank
    }
}

/// The most terms one search takes; every search of this crate needs at most four.
pub const MAX_TERMS: usize = 4;

/// The shortest string satisfying every term, or `None` when no string does.
///
/// Ties between strings of the same length are broken by [`WitnessOrder`]. With
/// [`WitnessOrder::Paths`] the empty string (the root `/`) is returned only when nothing
/// longer satisfies the terms. Witnesses are UTF-8 whenever one member term only admits UTF-8,
/// which every language built by this crate does. A search past the [`Budget`] is
/// [`Undecided`].
///
/// # Panics
///
/// With more than [`MAX_TERMS`] terms.
pub fn find_witness(
    terms: &[Term<'_>],
    order: WitnessOrder,
    budget: &Budget,
) -> Result<Option<String>, Undecided> {
    assert!(terms.len() <= MAX_TERMS, "at most {MAX_TERMS} terms");
    // A non-member term of the empty language is always satisfied; a member term never is.
    if terms.iter().any(|t| t.member && t.language.is_empty()) {
        return Ok(None);
    }
    budget.check()?;
    let mut walkers: Vec<(Walker<'_>, bool)> = Vec::with_capacity(MAX_TERMS);
    for t in terms {
        if !t.language.is_empty() {
            walkers.push((Walker::new(t.language)?, t.member));
        }
    }
    let k = walkers.len();
    let reps = representatives(&walkers, order);

    let accepts =
        |walkers: &mut Vec<(Walker<'_>, bool)>, states: &Key| -> Result<bool, Undecided> {
            for ((w, member), &s) in walkers.iter_mut().zip(states) {
                if w.accepts(s)? != *member {
                    return Ok(false);
                }
            }
            Ok(true)
        };

    // Product states by index; `parent[i]` is (parent index, byte) for spelling the witness.
    let filler = walkers
        .first()
        .map_or_else(LazyStateID::default, |(w, _)| w.start);
    let mut start: Key = [filler; MAX_TERMS];
    for (slot, (w, _)) in start.iter_mut().zip(&walkers) {
        *slot = w.start;
    }
    let mut states: Vec<Key> = vec![start];
    let mut parent: Vec<(u32, u8)> = vec![(u32::MAX, 0)];
    let mut index: HashMap<Key, u32, BuildFx> = HashMap::default();
    index.insert(start, 0);
    let root_accepts = accepts(&mut walkers, &start)?;
    if root_accepts && !order.root_last() {
        return Ok(Some(String::new()));
    }
    let mut head = 0usize;
    while head < states.len() {
        // Each state may build new DFA states of large NFAs: check the clock often.
        if head.is_multiple_of(16) {
            budget.check()?;
        }
        let cur = states[head];
        let cur_index = head as u32;
        head += 1;
        'bytes: for &b in &reps {
            let mut next: Key = [filler; MAX_TERMS];
            for j in 0..k {
                let (w, member) = &mut walkers[j];
                let s = w.next(cur[j], b)?;
                if *member && s.is_dead() {
                    continue 'bytes;
                }
                next[j] = s;
            }
            if index.contains_key(&next) {
                continue;
            }
            let id = states.len();
            if id >= PRODUCT_STATE_LIMIT {
                return Err(Undecided(format!(
                    "the comparison needs more than the verifier's {PRODUCT_STATE_LIMIT} product states"
                )));
            }
            index.insert(next, id as u32);
            states.push(next);
            parent.push((cur_index, b));
            if accepts(&mut walkers, &next)? {
                return Ok(Some(spell(&parent, id)));
            }
        }
    }
    Ok(root_accepts.then(String::new))
}

type Key = [LazyStateID; MAX_TERMS];

/// One byte per distinct combination of the DFAs' byte classes, in preference order: bytes of
/// the same combination lead to the same product state, so trying one of them is enough.
fn representatives(walkers: &[(Walker<'_>, bool)], order: WitnessOrder) -> Vec<u8> {
    // Bytes in preference order; the first byte of each class combination is its most
    // preferred one, and the result stays in preference order.
    let mut seen: std::collections::HashSet<u64, BuildFx> = Default::default();
    order
        .bytes()
        .iter()
        .copied()
        .filter(|&b| {
            let key = walkers.iter().fold(0u64, |acc, (w, _)| {
                (acc << 8) | u64::from(w.dfa.byte_classes().get(b))
            });
            seen.insert(key)
        })
        .collect()
}

/// A fast non-cryptographic hasher (the Fx hash of rustc) for product states: the keys are
/// small integers made by this module, so hash flooding is not a concern.
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

type BuildFx = std::hash::BuildHasherDefault<Fx>;

fn spell(parent: &[(u32, u8)], mut id: usize) -> String {
    let mut bytes = Vec::new();
    while parent[id].0 != u32::MAX {
        bytes.push(parent[id].1);
        id = parent[id].0 as usize;
    }
    bytes.reverse();
    // Member languages only admit UTF-8; a lossy conversion would only ever hide a bug.
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lang(res: &[&str]) -> Language {
        Language::from_regexes(res).unwrap()
    }

    #[test]
    fn path_universe_is_normalized_paths() {
        let u = Language::paths();
        for ok in ["", "/a", "/a/b", "/.x", "/...", "/é"] {
            assert!(u.is_match(ok), "{ok:?}");
        }
        for bad in ["/", "//a", "/a/", "/.", "/..", "/a/./b", "a", "/a\0b"] {
            assert!(!u.is_match(bad), "{bad:?}");
        }
    }

    #[test]
    fn witness_is_shortest_and_root_last() {
        let all = lang(&["^(?:/[^/]+)*$"]);
        let none = Language::empty();
        let w = find_witness(
            &[
                Term::member(Language::paths()),
                Term::member(&all),
                Term::non_member(&none),
            ],
            WitnessOrder::Paths,
            &Budget::per_tool(),
        );
        assert_eq!(w, Ok(Some("/a".to_string())));
        let root = lang(&["^$"]);
        let w = find_witness(
            &[Term::member(Language::paths()), Term::member(&root)],
            WitnessOrder::Paths,
            &Budget::per_tool(),
        );
        assert_eq!(w, Ok(Some(String::new())));
    }

    #[test]
    fn unicode_question_mark_is_one_char() {
        let q = lang(&["^/[^/]$"]);
        let ascii = lang(&["^/[\\x00-\\x7f]$"]);
        let w = find_witness(
            &[
                Term::member(Language::paths()),
                Term::member(&q),
                Term::non_member(&ascii),
            ],
            WitnessOrder::Paths,
            &Budget::per_tool(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(w.chars().count(), 2, "{w:?}");
        assert!(q.is_match(&w) && !ascii.is_match(&w));
    }
}
