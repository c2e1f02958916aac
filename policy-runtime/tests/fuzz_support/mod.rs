//! The fuzz harness shared by every fuzz target of the workspace (included with `#[path]`).
//!
//! A target is a proptest strategy and a check. [`fuzz`] first replays the target's seed
//! corpus, then generates inputs until `FUZZ_SECONDS` have passed (2 by default, the smoke run
//! of `cargo test`), with a fresh random seed for each batch, and prints the number of
//! executions. A failing input is shrunk by proptest and reported with the seed of its batch.
//! `scripts/fuzz.sh TARGET MINUTES` runs one target for longer in release mode.

#![allow(dead_code)]

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

/// How long a target runs: `FUZZ_SECONDS`, or a two-second smoke run.
pub fn budget() -> Duration {
    let secs = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(2);
    Duration::from_secs(secs)
}

/// Runs `check` on every `seeds` input, then on generated inputs until the budget is spent.
pub fn fuzz<S, F>(name: &str, seeds: &[S::Value], strategy: S, check: F)
where
    S: Strategy,
    S::Value: Clone + std::fmt::Debug,
    F: Fn(S::Value) -> Result<(), TestCaseError>,
{
    for seed in seeds {
        if let Err(e) = check(seed.clone()) {
            panic!("fuzz {name}: seed {seed:?} fails: {e}");
        }
    }
    let executions = Cell::new(seeds.len() as u64);
    let deadline = Instant::now() + budget();
    // `FUZZ_SEED` replays one batch; otherwise each batch gets a new seed, printed on failure.
    let fixed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    let mut batch = 0u64;
    while Instant::now() < deadline || (fixed.is_some() && batch == 0) {
        let seed = fixed.unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            nanos ^ batch.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        });
        batch += 1;
        let mut runner = TestRunner::new(Config {
            cases: 64,
            failure_persistence: None,
            rng_seed: RngSeed::Fixed(seed),
            ..Config::default()
        });
        let result = runner.run(&strategy, |input| {
            executions.set(executions.get() + 1);
            check(input)
        });
        if let Err(e) = result {
            panic!(
                "fuzz {name}: {e} (after {} executions; replay with FUZZ_SEED={seed})",
                executions.get()
            );
        }
    }
    eprintln!(
        "fuzz {name}: {} executions in {:.1} s, no failure",
        executions.get(),
        budget().as_secs_f64()
    );
}

/// The files of a seed corpus directory, as text, sorted by name.
pub fn corpus(dir: &Path) -> Vec<String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("seed corpus {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// Byte-level edits of a seed: each `(position, kind, byte)` deletes, inserts or replaces one
/// character, with bytes drawn from what JSON and TOML parsers branch on.
pub fn mutate(seed: &str, edits: &[(usize, u8, usize)]) -> String {
    const INTERESTING: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        "\"",
        ",",
        ":",
        "=",
        "\n",
        "-",
        "0",
        "1",
        "9",
        "e",
        ".",
        "/",
        "*",
        "\\",
        "\u{0}",
        "é",
        "\u{10ffff}",
        "true",
        "null",
        "tools",
        "fs",
        "read",
        "write",
        "limits",
        "x-",
        "99999999999999999999",
        "-1",
        "1.5",
        "**",
        "..",
        "{a,..}",
        "[!/]",
        "\\/",
    ];
    let mut chars: Vec<String> = seed.chars().map(String::from).collect();
    for &(pos, kind, pick) in edits {
        let at = if chars.is_empty() {
            0
        } else {
            pos % (chars.len() + 1)
        };
        let piece = INTERESTING[pick % INTERESTING.len()].to_string();
        match kind % 3 {
            0 if at < chars.len() => {
                chars.remove(at);
            }
            1 => chars.insert(at, piece),
            _ if at < chars.len() => chars[at] = piece,
            _ => chars.push(piece),
        }
    }
    chars.concat()
}
