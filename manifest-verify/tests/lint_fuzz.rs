//! Fuzzing `toolpolicy-lint`'s module walker and name resolver (issue 18) on the stable
//! toolchain: generated crates of inline, file and `#[path]` modules (cycles, missing and special
//! files, raw identifiers), glob and named imports in every direction, re-exports, helpers,
//! methods and nested macros, with one tool that writes a file directly.
//!
//! Every generated crate must be linted without a panic, within a time limit, and the tool's
//! direct write must be found whatever else the crate does.
//!
//! * `cargo test --test lint_fuzz` runs the seed corpus (`tests/lint_fuzz_seeds/`) and a short
//!   smoke run of generated crates.
//! * `scripts/fuzz-lint.sh MINUTES` runs generated crates for that long (it sets
//!   `LINT_FUZZ_SECONDS`), prints the number of executions, and saves each failing crate under
//!   `target/lint-fuzz-failures/` in the seed format, ready to be added to the corpus.
//!
//! Seed format: files separated by lines `//// path/of/file.rs`.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use manifest_verify::lint::{lint, Options, Report};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// How long one generated crate may take (an unoptimised build; the release limit is 2 s).
const PER_CASE: Duration = Duration::from_secs(20);

/// Reads choices from fuzzer bytes, like `arbitrary::Unstructured`: past the end, every choice
/// is 0.
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn below(&mut self, n: usize) -> usize {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b as usize % n.max(1)
            }
            None => 0,
        }
    }

    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[self.below(from.len())]
    }
}

const NAMES: &[&str] = &["a", "b", "c", "fs", "helper", "r#ref", "r#type", "io", "m"];
const PATHS: &[&str] = &[
    "crate",
    "self",
    "super",
    "crate::a",
    "crate::a::b",
    "crate::b::c",
    "super::super",
    "self::a",
    "std::fs",
    "std::io",
    "std::collections",
    "core::arch::x86",
    "core::arch::x86_64",
    "std::process",
    "a",
    "b",
    "r#ref",
    "crate::r#ref",
];
const PATH_FILES: &[&str] = &[
    "lib.rs",
    "a.rs",
    "x/mod.rs",
    "../src/lib.rs",
    "missing.rs",
    "/dev/null",
    "/dev/zero",
    ".",
    "ref.rs",
];

/// A generated crate: its files, `src/lib.rs` first.
fn generate(bytes: &[u8]) -> Vec<(String, String)> {
    let mut c = Choices(bytes);
    let mut files: Vec<(String, String)> = Vec::new();
    let mut root = String::new();
    let mut budget = 12;
    module_body(&mut c, &mut root, &mut files, "src", 0, &mut budget);
    root.push_str(
        "#[tool(policy(fs.read = [\"/data/**\"]))]\nfn tool() {\n    std::fs::write(\"/out\", b\"\");\n",
    );
    for _ in 0..c.below(4) {
        root.push_str(&format!("    {}\n", call(&mut c)));
    }
    root.push_str("}\n");
    files.insert(0, ("src/lib.rs".into(), root));
    files
}

fn call(c: &mut Choices<'_>) -> String {
    match c.below(7) {
        0 => format!("{}::{}();", c.pick(PATHS), c.pick(NAMES)),
        1 => format!("{}();", c.pick(NAMES)),
        2 => "std::fs::remove_file(\"/x\");".into(),
        3 => format!("m!({});", c.pick(NAMES)),
        4 => format!("S.{}();", c.pick(NAMES)),
        5 => {
            let depth = 1 + c.below(40);
            format!(
                "{}{}(){};",
                "m!(".repeat(depth),
                c.pick(NAMES),
                ")".repeat(depth)
            )
        }
        _ => format!("{}::S::{}();", c.pick(PATHS), c.pick(NAMES)),
    }
}

/// Items of one module into `out`; child modules into `out` (inline) or `files`.
fn module_body(
    c: &mut Choices<'_>,
    out: &mut String,
    files: &mut Vec<(String, String)>,
    dir: &str,
    depth: usize,
    budget: &mut usize,
) {
    for _ in 0..c.below(7) {
        match c.below(9) {
            0 => out.push_str(&format!("use {}::*;\n", c.pick(PATHS))),
            1 => out.push_str(&format!("pub use {}::*;\n", c.pick(PATHS))),
            2 => out.push_str(&format!("pub use {}::{};\n", c.pick(PATHS), c.pick(NAMES))),
            3 => out.push_str(&format!(
                "use {}::{} as {};\n",
                c.pick(PATHS),
                c.pick(NAMES),
                c.pick(NAMES)
            )),
            4 => {
                let name = c.pick(NAMES);
                let body = (0..c.below(3))
                    .map(|_| call(c))
                    .collect::<Vec<_>>()
                    .join(" ");
                out.push_str(&format!("pub fn {name}() {{ {body} }}\n"));
            }
            5 => {
                let name = c.pick(NAMES);
                let body = call(c);
                out.push_str(&format!(
                    "pub struct S;\nimpl S {{ pub fn {name}(&self) {{ {body} }} }}\n"
                ));
            }
            6 => out.push_str("macro_rules! m { ($($t:tt)*) => { $($t)* }; }\n"),
            _ if depth < 4 && *budget > 0 => {
                *budget -= 1;
                let name = c.pick(NAMES);
                let file_name = name.trim_start_matches("r#");
                match c.below(3) {
                    0 => {
                        out.push_str(&format!("pub mod {name} {{\n"));
                        module_body(
                            c,
                            out,
                            files,
                            &format!("{dir}/{file_name}"),
                            depth + 1,
                            budget,
                        );
                        out.push_str("}\n");
                    }
                    1 => {
                        out.push_str(&format!("pub mod {name};\n"));
                        let mut text = String::new();
                        module_body(
                            c,
                            &mut text,
                            files,
                            &format!("{dir}/{file_name}"),
                            depth + 1,
                            budget,
                        );
                        files.push((format!("{dir}/{file_name}.rs"), text));
                    }
                    _ => {
                        let target = c.pick(PATH_FILES);
                        out.push_str(&format!("#[path = \"{target}\"] pub mod {name};\n"));
                        if !target.starts_with('/') && !target.starts_with('.') && c.below(2) == 0 {
                            let mut text = String::new();
                            module_body(c, &mut text, files, dir, depth + 1, budget);
                            files.push((format!("{dir}/{target}"), text));
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

fn write(files: &[(String, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        // A later file of the same path (a `#[path]` naming an existing module) extends it.
        let mut old = std::fs::read_to_string(&path).unwrap_or_default();
        old.push_str(text);
        std::fs::write(&path, old).unwrap();
    }
    dir
}

fn lint_within(dir: &Path) -> Result<Report, String> {
    let (send, receive) = mpsc::channel();
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        let result = std::panic::catch_unwind(|| lint(&dir, &Options::default()));
        let _ = send.send(result);
    });
    match receive.recv_timeout(PER_CASE) {
        Ok(Ok(Ok(report))) => Ok(report),
        Ok(Ok(Err(e))) => Err(format!("the lint failed: {e}")),
        Ok(Err(_)) => Err("the lint panicked".into()),
        Err(_) => Err(format!("the lint took longer than {PER_CASE:?}")),
    }
}

/// The property: no panic, no hang, the tool's direct write found.
fn check(files: &[(String, String)]) -> Result<(), String> {
    let dir = write(files);
    let report = lint_within(dir.path())?;
    let direct = report
        .findings
        .iter()
        .any(|f| f.tool == "tool" && f.call == "std::fs::write" && f.call_path.len() == 1);
    if report.tools != 1 || !direct {
        return Err(format!(
            "the tool's direct write was not found: {} tool(s), findings {:?}, problems {:?}",
            report.tools,
            report.findings.iter().map(|f| &f.call).collect::<Vec<_>>(),
            report
                .problems
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
        ));
    }
    Ok(())
}

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lint_fuzz_seeds")
}

/// A seed file's crate.
fn parse_seed(text: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        match line.strip_prefix("//// ") {
            Some(path) => files.push((path.trim().to_string(), String::new())),
            None => {
                if let Some((_, text)) = files.last_mut() {
                    text.push_str(line);
                }
            }
        }
    }
    files
}

fn render_seed(files: &[(String, String)]) -> String {
    files
        .iter()
        .map(|(path, text)| format!("//// {path}\n{text}"))
        .collect()
}

#[test]
fn the_seed_corpus_lints_cleanly() {
    let mut seeds: Vec<PathBuf> = std::fs::read_dir(seeds_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 8, "the seed corpus is missing");
    let mut failures = Vec::new();
    for seed in &seeds {
        let files = parse_seed(&std::fs::read_to_string(seed).unwrap());
        let start = Instant::now();
        if let Err(e) = check(&files) {
            failures.push(format!("{}: {e}", seed.display()));
        }
        println!("{}: {:?}", seed.display(), start.elapsed());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn run(cases: u32, seed: [u8; 32]) -> (u32, Option<Vec<(String, String)>>) {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
    let executed = std::cell::Cell::new(0u32);
    let result = runner.run(&proptest::collection::vec(any::<u8>(), 0..400), |bytes| {
        executed.set(executed.get() + 1);
        check(&generate(&bytes)).map_err(TestCaseError::fail)
    });
    let failing = match result {
        Ok(()) => None,
        Err(proptest::test_runner::TestError::Fail(_, bytes)) => Some(generate(&bytes)),
        Err(e) => panic!("{e}"),
    };
    (executed.get(), failing)
}

#[test]
fn generated_module_trees_lint_cleanly() {
    let budget = std::env::var("LINT_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    let Some(seconds) = budget else {
        // The smoke run: a fixed seed, so that CI is reproducible.
        let (executed, failing) = run(24, [7; 32]);
        println!("lint fuzz smoke run: {executed} executions");
        if let Some(files) = failing {
            panic!("failing crate:\n{}", render_seed(&files));
        }
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut executions, mut failures) = (0u64, Vec::new());
    let mut round = 0u64;
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    while Instant::now() < deadline {
        let mut seed = [0u8; 32];
        seed[..8]
            .copy_from_slice(&(base ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes());
        round += 1;
        let (executed, failing) = run(64, seed);
        executions += u64::from(executed);
        if let Some(files) = failing {
            let out = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../target/lint-fuzz-failures")
                .join(format!("failure-{base}-{round}.txt"));
            std::fs::create_dir_all(out.parent().unwrap()).unwrap();
            std::fs::write(&out, render_seed(&files)).unwrap();
            failures.push(out);
        }
    }
    println!(
        "lint fuzz: {executions} executions in {seconds} s, {} failure(s)",
        failures.len()
    );
    assert!(failures.is_empty(), "failing crates saved: {failures:?}");
}
