//! Fuzz target `dsl`: the one reader of the policy language ([`policy_analysis::dsl`]) against
//! generated attributes.
//!
//! Inputs are token streams shaped like `#[tool(...)]`'s arguments (the seed corpus in
//! `tests/dsl_corpus/`, then generated ones): valid keys and values, and mutations of them
//! (literals of the wrong kind, lists nested thousands deep, lists with stray commas, numbers
//! past `u64`, unicode, duplicate keys, random punctuation). Each input goes the way the
//! attribute macro takes it (the depth check, then the reader), on a thread with the compiler's
//! 8 MiB stack, and:
//!
//! * nothing panics nor overflows the stack;
//! * every error the reader reports points at written text (never at no place), so both the
//!   compiler and toolpolicy-lint, which calls the same reader, can show where it is;
//! * an accepted attribute's policy survives the manifest's JSON unchanged.
//!
//! `scripts/fuzz.sh dsl MINUTES` runs it for longer; `cargo test` runs it for two seconds.

use std::sync::atomic::{AtomicU64, Ordering};

use proc_macro2::TokenStream;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::fuzz_support::{corpus, fuzz};
/// How many inputs the reader accepted.
static ACCEPTED: AtomicU64 = AtomicU64::new(0);

/// The function the generated attribute stands on.
const FN_NAME: &str = "probe";

/// Words the DSL gives meaning to, and near misses.
const WORDS: &[&str] = &[
    "deny", "allow", "none", "low", "medium", "high", "critical", "true", "false", "read", "write",
    "fetch", "probe", "Low", "DENY", "é", "r#fn", "r#none", "_", "self", "fn",
];

/// String literals: globs, hosts, programs, variables, tool names, and broken ones.
const STRINGS: &[&str] = &[
    r#""/data/**""#,
    r#""/srv/*.csv""#,
    r#""/**""#,
    r#""relative""#,
    r#""/a/{b,..}/**""#,
    r#""/tmp\\/../etc/**""#,
    r#""api.example.com:443""#,
    r#""*.example.org:443""#,
    r#""127.0.0.1:8080""#,
    r#""host""#,
    r#""rg""#,
    r#""/usr/bin/git""#,
    r#""HOME""#,
    r#""AWS_*""#,
    r#""low""#,
    r#""true""#,
    r#""fetch""#,
    r#""""#,
    r#""/é/ü/**""#,
    r#""\u{202e}/x""#,
    r#""/a\0b""#,
    r#"r"/raw/**""#,
    r#"b"/bytes""#,
    "'c'",
];

/// Numbers, in range and out of it, and literals of other kinds.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "3",
    "5000",
    "-1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "999999999999999999999999999999999999",
    "1.5",
    "1e9",
    "0x10",
    "1_000",
    "3u8",
    "-0",
];

const KEYS: &[&str] = &[
    "fs.read",
    "fs.write",
    "fs . read",
    "fs.raed",
    "net",
    "exec",
    "env",
    "risk",
    "max_invocations",
    "only_after",
    "forbidden",
    "requires_approval",
    "timeout_ms",
    "memory_bytes",
    "max_open_files",
    "name",
    "description",
    "dest",
    "fs",
    "policy",
    "r#net",
    "é",
    "fs.read.x",
];

const GROUPS: &[&str] = &["policy", "constraints", "limits", "paths", "fs", "net"];

const PUNCTUATION: &[&str] = &[
    ",", "=", "|", "::", "#", "@", "=>", ".", "!", "&", "?", ";", "$", "-", "..", "'a", "()", "[]",
    "{}",
];

/// One value, `depth` lists deep at most.
fn value(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        3 => prop::sample::select(WORDS).prop_map(str::to_string),
        4 => prop::sample::select(STRINGS).prop_map(str::to_string),
        2 => prop::sample::select(NUMBERS).prop_map(str::to_string),
        1 => prop::sample::select(PUNCTUATION).prop_map(str::to_string),
        // A list nested far past any limit: the depth check must refuse it without recursion.
        1 => (1usize..6_000, prop::sample::select(STRINGS))
            .prop_map(|(n, s)| format!("{}{s}{}", "[".repeat(n), "]".repeat(n))),
    ];
    leaf.prop_recursive(depth, 24, 6, |inner| {
        (prop::collection::vec(inner, 0..6), 0u8..4).prop_map(|(items, commas)| {
            // Stray commas: `[,]`, `[a,,b]`, a trailing one, or none between items.
            let sep = match commas {
                0 => " ",
                1 => ", , ",
                _ => ", ",
            };
            let tail = if commas == 3 { "," } else { "" };
            format!("[{}{tail}]", items.join(sep))
        })
    })
    .boxed()
}

/// `key = value`, `key(...)`, a bare key, or random punctuation.
fn entry(depth: u32) -> BoxedStrategy<String> {
    let assign = (prop::sample::select(KEYS), value(3))
        .prop_map(|(k, v)| format!("{k} = {v}"))
        .boxed();
    let bare = prop::sample::select(KEYS).prop_map(str::to_string).boxed();
    let stray = prop::collection::vec(prop::sample::select(PUNCTUATION), 1..4)
        .prop_map(|p| p.join(" "))
        .boxed();
    let leaf = prop_oneof![6 => assign, 1 => bare, 1 => stray];
    leaf.prop_recursive(depth, 32, 8, |inner| {
        (
            prop::sample::select(GROUPS),
            prop::collection::vec(inner, 0..8),
        )
            .prop_map(|(g, entries)| format!("{g}({})", entries.join(", ")))
    })
    .boxed()
}

/// A policy the reader should accept, so that the accepted path has material:
/// each capability key at most once, with one of its valid forms.
fn valid_policy() -> impl Strategy<Value = String> {
    fn one_of(forms: &'static [&'static str]) -> impl Strategy<Value = Option<&'static str>> {
        prop::option::of(prop::sample::select(forms))
    }
    const GLOBS: &[&str] = &[
        "\"/data/**\"",
        "[\"/data/**\", \"/srv/*.csv\"]",
        "none",
        "[]",
        "[\"/**\"]",
        "\"/é/**\"",
    ];
    const NET: &[&str] = &[
        "deny",
        "allow",
        "none",
        "[]",
        "[\"api.example.com:443\"]",
        "\"*.example.org:443\"",
    ];
    const EXEC: &[&str] = &[
        "deny",
        "allow",
        "none",
        "[\"rg\", \"/usr/bin/git\"]",
        "\"rg\"",
    ];
    const ENV: &[&str] = &["deny", "none", "[\"HOME\", \"AWS_*\"]", "\"PATH\""];
    const RISK: &[&str] = &["low", "medium", "high", "critical"];
    (
        (one_of(GLOBS), one_of(GLOBS), any::<bool>()),
        (one_of(NET), one_of(EXEC), one_of(ENV), one_of(RISK)),
        prop::option::of(prop::sample::select(&["\"renamed\"", "fetch", "\"é\""][..])),
        prop::sample::select(
            &[
                "",
                "constraints(max_invocations = 3)",
                "limits(timeout_ms = 5000)",
            ][..],
        ),
    )
        .prop_map(
            |((read, write, grouped), (net, exec, env, risk), name, extra)| {
                let mut parts = Vec::new();
                if grouped && (read.is_some() || write.is_some()) {
                    let fs: Vec<String> = [("read", read), ("write", write)]
                        .into_iter()
                        .filter_map(|(k, v)| v.map(|v| format!("{k} = {v}")))
                        .collect();
                    parts.push(format!("fs({})", fs.join(", ")));
                } else {
                    parts.extend(read.map(|v| format!("fs.read = {v}")));
                    parts.extend(write.map(|v| format!("fs.write = {v}")));
                }
                parts.extend(net.map(|v| format!("net = {v}")));
                parts.extend(exec.map(|v| format!("exec = {v}")));
                parts.extend(env.map(|v| format!("env = {v}")));
                parts.extend(risk.map(|v| format!("risk = {v}")));
                let mut attr = format!("policy({})", parts.join(", "));
                if let Some(name) = name {
                    attr = format!("name = {name}, {attr}");
                }
                if !extra.is_empty() {
                    attr = format!("{attr}, {extra}");
                }
                attr
            },
        )
}

/// Either a valid attribute or a mutated one.
fn input() -> impl Strategy<Value = String> {
    prop_oneof![valid_policy(), attribute()]
}

/// A whole attribute, with whole-token mutations on top: an entry repeated (duplicate keys), a
/// piece deleted, a deep run of parentheses around everything.
fn attribute() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(entry(3), 0..6),
        prop::collection::vec((any::<prop::sample::Index>(), 0u8..3), 0..3),
        prop_oneof![8 => Just(0usize), 1 => 1usize..6_000],
    )
        .prop_map(|(mut entries, edits, parens)| {
            for (at, kind) in edits {
                if entries.is_empty() {
                    break;
                }
                let i = at.index(entries.len());
                match kind {
                    0 => entries.push(entries[i].clone()),
                    1 => {
                        entries.remove(i);
                    }
                    _ => entries.swap(0, i),
                }
            }
            let body = entries.join(", ");
            if parens == 0 {
                body
            } else {
                format!("policy({}{body}{})", "(".repeat(parens), ")".repeat(parens))
            }
        })
}

fn check(text: &str) -> Result<(), TestCaseError> {
    // Text that does not lex (an unbalanced bracket) never reaches the reader.
    let Ok(tokens) = text.parse::<TokenStream>() else {
        return Ok(());
    };
    // Refused before any parsing: too deep for syn (that check has its own tests).
    if crate::depth::check(&tokens, proc_macro2::Span::call_site(), "#[tool]").is_err() {
        return Ok(());
    }
    // The closing parenthesis of the attribute, as the lint passes it from a parsed file.
    let close: TokenStream = "()".parse().expect("lexes");
    let Some(proc_macro2::TokenTree::Group(close)) = close.into_iter().next() else {
        unreachable!("`()` is a group")
    };
    match policy_analysis::dsl::read_at(tokens, close.span_close(), FN_NAME) {
        Ok(checked) => {
            ACCEPTED.fetch_add(1, Ordering::Relaxed);
            let json = serde_json::to_string(&checked.policy).expect("a policy serializes");
            let back: policy_runtime::ToolPolicy = serde_json::from_str(&json).map_err(|e| {
                TestCaseError::fail(format!("{text}: {json} does not read back: {e}"))
            })?;
            prop_assert_eq!(back, checked.policy, "{} changes through JSON", text);
        }
        Err(errors) => {
            for error in errors {
                prop_assert!(
                    !error.span().byte_range().is_empty(),
                    "{text}: the error `{error}` points at no place"
                );
            }
        }
    }
    Ok(())
}

#[test]
fn fuzz_dsl() {
    // The compiler runs a proc macro on a thread with an 8 MiB stack; so does the target.
    let run = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(|| {
            let seeds =
                corpus(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dsl_corpus"));
            fuzz("dsl", &seeds, input(), |text| check(&text));
            eprintln!(
                "fuzz dsl: the reader accepted {} inputs",
                ACCEPTED.load(Ordering::Relaxed)
            );
        })
        .expect("spawn the fuzz thread");
    if let Err(panic) = run.join() {
        std::panic::resume_unwind(panic);
    }
}
