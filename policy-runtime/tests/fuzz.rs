//! Fuzz targets of policy-runtime (issue 18): the manifest and TOML loaders, the gate
//! (policy × arguments) and the glob matchers. Each runs two seconds under `cargo test`;
//! `scripts/fuzz.sh TARGET MINUTES` runs one for longer (see `fuzz_support`).

#[path = "fuzz_support/mod.rs"]
mod fuzz_support;

use std::path::Path;

use fuzz_support::{corpus, fuzz, mutate};
use policy_runtime::gate::checked_paths;
use policy_runtime::glob::{Glob, GlobList};
use policy_runtime::path::{looks_like_path, resolve, verbatim_reading};
use policy_runtime::tool::{Access, PathArg};
use policy_runtime::{Manifest, ToolPolicy};
use proptest::prelude::*;
use serde_json::Value;

/// Words of the implementation that must never reach a user's error message.
const RUST_WORDS: [&str; 7] = [
    "struct ",
    "EntryRepr",
    "u32",
    "u64",
    "i64",
    "i128",
    "sequence",
];

fn seeds(kind: &str) -> Vec<String> {
    corpus(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fuzz_corpus")
            .join(kind),
    )
}

/// One edit of [`mutate`]: position, kind, piece.
type Edit = (usize, u8, usize);

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 0..8)
}

fn plain_error(message: &str) -> Result<(), TestCaseError> {
    for word in RUST_WORDS {
        prop_assert!(!message.contains(word), "`{word}` in error: {message}");
    }
    Ok(())
}

#[test]
fn fuzz_manifest_loader() {
    let corpus = seeds("manifest");
    let n = corpus.len();
    let inputs: Vec<(usize, Vec<Edit>)> = (0..n).map(|i| (i, vec![])).collect();
    fuzz("manifest_loader", &inputs, (0..n, edits()), |(i, e)| {
        let text = mutate(&corpus[i], &e);
        match Manifest::from_json_str("m.json", &text) {
            Ok(m) => {
                let again = Manifest::from_json_str("m.json", &m.to_json())
                    .map_err(|e| TestCaseError::fail(format!("round trip: {e}")))?;
                prop_assert_eq!(&m, &again);
                prop_assert_eq!(m.to_json(), again.to_json());
            }
            Err(e) => {
                plain_error(&e.to_string())?;
                prop_assert!(e.to_string().starts_with("m.json"), "{}", e);
            }
        }
        Ok(())
    });
}

#[test]
fn fuzz_toml_loader() {
    let corpus = seeds("toml");
    let n = corpus.len();
    let inputs: Vec<(usize, Vec<Edit>)> = (0..n).map(|i| (i, vec![])).collect();
    fuzz("toml_loader", &inputs, (0..n, edits()), |(i, e)| {
        let text = mutate(&corpus[i], &e);
        match ToolPolicy::from_toml_str("p.toml", &text) {
            Ok(p) => {
                let again = ToolPolicy::from_toml_str("p.toml", &p.to_toml())
                    .map_err(|e| TestCaseError::fail(format!("round trip: {e}")))?;
                prop_assert_eq!(p, again);
            }
            Err(e) => plain_error(&e.to_string())?,
        }
        Ok(())
    });
}

/// Globs over a small alphabet, every construct of the dialect.
fn glob_text() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "a", "b", "é", ".", "*", "?", "[ab]", "[!a]", "{a,b}", "{,a}", "{a,..}", "\\*", "\\/",
    ]);
    let component = prop_oneof![
        1 => Just("**".to_string()),
        4 => prop::collection::vec(token, 1..=3).prop_map(|t| t.concat()),
    ];
    prop::collection::vec(component, 1..=3).prop_map(|c| format!("/{}", c.join("/")))
}

fn path_text() -> impl Strategy<Value = String> {
    let component = prop::sample::select(vec!["a", "b", "ab", "é", ".a", "*", "a.b", "aé", "ba"]);
    prop::collection::vec(component, 0..=4).prop_map(|c| format!("/{}", c.join("/")))
}

/// The glob's language through its regex (the verifier's view), for the root convention.
fn regex_match(re: &regex::Regex, path: &str) -> bool {
    re.is_match(if path == "/" { "" } else { path })
}

#[test]
fn fuzz_glob_matchers_agree() {
    fuzz(
        "glob_matchers",
        &[],
        (
            prop::collection::vec(glob_text(), 1..=4),
            prop::collection::vec(path_text(), 1..=8),
        ),
        |(texts, paths)| {
            let globs: Vec<Glob> = texts.iter().filter_map(|t| Glob::new(t).ok()).collect();
            for t in &texts {
                if let Ok(g) = Glob::new(t) {
                    // Rejected at load: escapes of `/` and dot components (issue 18 item 13).
                    prop_assert!(!t.contains("\\/"), "{t} accepted");
                    prop_assert!(!g
                        .components()
                        .iter()
                        .any(|c| c.as_literal().is_some_and(|l| l == ".." || l == ".")));
                }
            }
            // The small list is one automaton; padded past 32 globs it is the prefix index.
            let small = GlobList::from_globs(globs.clone());
            let mut padded = globs.clone();
            padded.extend((0..40).map(|i| Glob::new(&format!("/pad{i}/**")).unwrap()));
            let big = GlobList::from_globs(padded);
            let regexes: Vec<regex::Regex> = globs
                .iter()
                .map(|g| regex::Regex::new(&g.to_regex()).unwrap())
                .collect();
            for path in &paths {
                let first = globs.iter().find(|g| g.is_match(path));
                for (g, re) in globs.iter().zip(&regexes) {
                    prop_assert_eq!(g.is_match(path), regex_match(re, path), "{} vs {}", g, path);
                }
                prop_assert_eq!(small.is_match(path), first.is_some(), "{}", path);
                prop_assert_eq!(big.is_match(path), first.is_some(), "{}", path);
                prop_assert_eq!(big.first_match(path), first, "{}", path);
            }
            Ok(())
        },
    );
}

fn arg_string() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "/a",
        "/a/b",
        "/b",
        "/a/../b",
        "/b/../a/x",
        "file:///a",
        "file:///a#/../../b",
        "file:///a?/../b",
        "file://localhost/a/b",
        "file://evil/a",
        "file:///a%2e%2e",
        "file:///a/%2e%2e/b",
        "FILE:/a/x",
        "rel/a",
        "..",
        "/a\u{0}/../b",
        "",
        "/",
        "/é/a",
        "file:///a/x#frag",
        "/a/./b//c/",
    ])
    .prop_map(String::from)
}

fn args_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        arg_string().prop_map(Value::String),
        Just(Value::Null),
        any::<i64>().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((arg_string(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Every string of an untyped argument the gate must have judged: values and keys that look
/// like paths, with each of their readings.
fn readings(value: &Value, out: &mut Vec<String>) {
    fn add(s: &str, out: &mut Vec<String>) {
        if looks_like_path(s) {
            if let Ok(p) = resolve(s, None) {
                out.push(p);
            }
            out.extend(verbatim_reading(s));
        }
    }
    match value {
        Value::String(s) => add(s, out),
        Value::Array(items) => items.iter().for_each(|i| readings(i, out)),
        Value::Object(map) => {
            for (k, v) in map {
                add(k, out);
                readings(v, out);
            }
        }
        _ => {}
    }
}

#[test]
fn fuzz_gate() {
    fuzz(
        "gate",
        &[],
        (
            prop::collection::vec(glob_text(), 0..=3),
            prop::collection::vec(glob_text(), 0..=3),
            args_value(),
            any::<bool>(),
        ),
        |(read, write, args, typed_dest)| {
            let read = GlobList::new(read.iter().filter(|g| Glob::new(g).is_ok())).unwrap();
            let write = GlobList::new(write.iter().filter(|g| Glob::new(g).is_ok())).unwrap();
            let mut policy = ToolPolicy::default();
            policy.fs.read = Some(read.clone());
            policy.fs.write = Some(write.clone());
            let typed: Vec<PathArg> = if typed_dest {
                vec![PathArg {
                    name: "/a".into(),
                    access: Access::Write,
                }]
            } else {
                vec![]
            };
            let mut wrapped = serde_json::json!({ "x": args.clone() });
            if let Ok(checked) = checked_paths(&policy, &typed, &mut wrapped, None) {
                // Oracle: every reading of every path-like string is admitted.
                let mut all = Vec::new();
                readings(&args, &mut all);
                for p in &all {
                    prop_assert!(
                        read.is_match(p) || write.is_match(p),
                        "{} allowed, args {}",
                        p,
                        args
                    );
                }
                for c in &checked {
                    prop_assert!(
                        write.is_match(&c.path)
                            || (c.access != Access::Write && read.is_match(&c.path))
                    );
                }
            }
            Ok(())
        },
    );
}
