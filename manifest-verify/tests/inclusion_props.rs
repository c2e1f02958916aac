//! Fuzz target `inclusion`: the automata verdict agrees with brute-force enumeration.
//!
//! Random glob sets over a small alphabet (`a`, `b`, `.`, `é`) are compared with
//! [`path_witness`]. Every normalized path up to three components of up to two characters is
//! enumerated and judged with the runtime's own matcher (`GlobList::is_match`):
//!
//! * a reported witness is a normalized path admitted by `new` and rejected by `old`;
//! * when enumeration finds such a path, the automata must report a witness ("not widened" is
//!   never said when a witness exists), and no longer than the shortest one enumerated.
//!
//! And `grouped_search_equals_the_whole_search`: [`path_witness`], which splits the question
//! by the admitted globs' literal directories and caches answers, returns exactly the witness
//! of [`whole_path_witness`], one search of the whole sets' automata.

#[path = "../../policy-runtime/tests/fuzz_support/mod.rs"]
mod fuzz_support;

use fuzz_support::fuzz;
use manifest_verify::fs::{path_witness, whole_path_witness, GlobCache, PathSet};
use manifest_verify::inclusion::Budget;
use policy_runtime::GlobList;
use proptest::prelude::*;

const CHARS: [char; 4] = ['a', 'b', '.', 'é'];

fn component() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just(".".to_string()),
        Just("é".to_string()),
        Just("*".to_string()),
        Just("?".to_string()),
        Just("[ab]".to_string()),
        Just("[!a]".to_string()),
        Just("[a-é]".to_string()),
        Just("{a,b}".to_string()),
        Just("{a,.b,é}".to_string()),
    ];
    prop_oneof![
        1 => Just("**".to_string()),
        4 => prop::collection::vec(token, 1..=2).prop_map(|t| t.concat()),
    ]
}

fn glob() -> impl Strategy<Value = String> {
    prop::collection::vec(component(), 1..=3).prop_map(|c| format!("/{}", c.join("/")))
}

/// A declared list (invalid globs such as `/..` or `/a**` are dropped), or unspecified.
fn side() -> impl Strategy<Value = Option<GlobList>> {
    prop_oneof![
        1 => Just(None),
        9 => prop::collection::vec(glob(), 0..=3).prop_map(|globs| {
            let valid: Vec<String> = globs
                .into_iter()
                .filter(|g| policy_runtime::Glob::new(g).is_ok())
                .collect();
            Some(GlobList::new(&valid).unwrap())
        }),
    ]
}

fn universe() -> Vec<String> {
    let mut comps: Vec<String> = CHARS.iter().map(|c| c.to_string()).collect();
    for a in CHARS {
        for b in CHARS {
            comps.push(format!("{a}{b}"));
        }
    }
    comps.retain(|c| c != "." && c != "..");
    let mut paths = vec!["/".to_string()];
    let mut frontier = vec![String::new()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for prefix in &frontier {
            for c in &comps {
                next.push(format!("{prefix}/{c}"));
            }
        }
        paths.extend(next.iter().cloned());
        frontier = next;
    }
    paths
}

fn admits(list: &Option<GlobList>, path: &str) -> bool {
    list.as_ref().is_none_or(|l| l.is_match(path))
}

fn set(list: &Option<GlobList>) -> PathSet<'_> {
    PathSet::union([list.as_ref().map(|l| l.globs())])
}

fn is_normalized(path: &str) -> bool {
    path == "/"
        || (path.starts_with('/')
            && path[1..]
                .split('/')
                .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains('\0')))
}

/// The fuzz target `inclusion` (issue 18): two seconds under `cargo test`,
/// `scripts/fuzz.sh inclusion MINUTES` for longer.
#[test]
fn fuzz_inclusion() {
    let paths = universe();
    fuzz("inclusion", &[], (side(), side()), |(old, new)| {
        let mut cache = GlobCache::default();
        // A budget far beyond these small globs: the verdict, not the budget, is under test.
        let budget = Budget::new(std::time::Duration::from_secs(60));
        let witness = path_witness(&mut cache, &set(&new), &set(&old), &budget).unwrap();
        let brute: Vec<&String> = paths
            .iter()
            .filter(|p| admits(&new, p) && !admits(&old, p))
            .collect();
        if let Some(w) = &witness {
            prop_assert!(is_normalized(w), "witness {w:?} is not a normalized path");
            prop_assert!(admits(&new, w), "witness {w:?} not admitted by new {new:?}");
            prop_assert!(!admits(&old, w), "witness {w:?} admitted by old {old:?}");
        }
        if let Some(shortest) = brute
            .iter()
            .filter(|p| p.as_str() != "/")
            .min_by_key(|p| p.len())
        {
            let w = witness.as_ref();
            prop_assert!(
                w.is_some(),
                "not widened, but {shortest} is admitted by new {new:?} and not old {old:?}"
            );
            let w = w.unwrap();
            prop_assert!(
                w.len() <= shortest.len(),
                "witness {w:?} longer than {shortest:?}"
            );
        } else if brute.iter().any(|p| p.as_str() == "/") {
            prop_assert!(
                witness.is_some(),
                "the root is a witness for new {new:?} old {old:?}"
            );
        }
        Ok(())
    });
}

#[test]
fn enumeration_is_large_enough_to_matter() {
    assert!(universe().len() > 5_000);
}

/// Globs that share leading directories often, as real tools do: literal components from a
/// few names, mixed with the wildcard components of [`component`].
fn prefixed_glob() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        4 => prop::sample::select(vec!["a", "b", "ab", "é", ".a"]).prop_map(str::to_string),
        2 => component(),
    ];
    prop::collection::vec(part, 1..=4).prop_map(|c| format!("/{}", c.join("/")))
}

fn prefixed_side() -> impl Strategy<Value = Option<GlobList>> {
    prop_oneof![
        1 => Just(None),
        12 => prop::collection::vec(prefixed_glob(), 0..=5).prop_map(|globs| {
            let valid: Vec<String> = globs
                .into_iter()
                .filter(|g| policy_runtime::Glob::new(g).is_ok())
                .collect();
            Some(GlobList::new(&valid).unwrap())
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, failure_persistence: None, ..ProptestConfig::default() })]

    /// The grouped, cached search and the one whole search give the same witness (or none),
    /// both from a fresh cache and from one that answered the reverse question first.
    #[test]
    fn grouped_search_equals_the_whole_search((old, new) in (prefixed_side(), prefixed_side())) {
        let budget = Budget::new(std::time::Duration::from_secs(60));
        let (old, new) = (set(&old), set(&new));
        let whole = whole_path_witness(&mut GlobCache::default(), &new, &old, &budget).unwrap();
        let grouped = path_witness(&mut GlobCache::default(), &new, &old, &budget).unwrap();
        prop_assert_eq!(&grouped, &whole, "new {:?} old {:?}", new, old);
        let mut shared = GlobCache::default();
        let reverse = path_witness(&mut shared, &old, &new, &budget).unwrap();
        prop_assert_eq!(
            reverse,
            whole_path_witness(&mut GlobCache::default(), &old, &new, &budget).unwrap()
        );
        prop_assert_eq!(path_witness(&mut shared, &new, &old, &budget).unwrap(), whole);
    }
}
