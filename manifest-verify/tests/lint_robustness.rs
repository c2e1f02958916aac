//! Inputs that used to crash, hang or exhaust `toolpolicy-lint` (issue 18): deep nesting,
//! self-including modules, glob imports, nested macros, special files, huge files, raw
//! identifiers, many findings, unparsable files in SARIF, and labels past column 65,535.
//!
//! Each test runs the lint under a deadline, so a regression fails instead of hanging the run.

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use manifest_verify::lint::{lint, render, LintError, Options, Report};

/// A crate without a manifest: `src/lib.rs` and the other files given.
fn krate(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// The lint of `dir`, failing the test when it takes longer than `limit`.
fn lint_within(dir: &Path, limit: Duration) -> Report {
    let (send, receive) = mpsc::channel();
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        let _ = send.send(lint(&dir, &Options::default()));
    });
    match receive.recv_timeout(limit) {
        Ok(result) => result.expect("the lint runs"),
        Err(_) => panic!("the lint took longer than {limit:?}"),
    }
}

fn timed(dir: &Path, limit: Duration) -> (Report, Duration) {
    let start = Instant::now();
    let report = lint_within(dir, limit);
    (report, start.elapsed())
}

const TOOL: &str = "#[tool(policy(fs.read = [\"/data/**\"]))]\n";

fn problems(report: &Report) -> Vec<String> {
    report.problems.iter().map(|p| p.to_string()).collect()
}

/// Source nested `n` levels deep in each of the ways that make the parser recurse.
fn nested(n: usize) -> Vec<(&'static str, String)> {
    vec![
        (
            "blocks",
            format!("fn f() {{ {}{} }}", "{".repeat(n), "}".repeat(n)),
        ),
        (
            "generic types",
            format!("type T = {}u8{};", "Vec<".repeat(n), ">".repeat(n)),
        ),
        (
            "parentheses",
            format!("fn f() {{ {}1{}; }}", "(".repeat(n), ")".repeat(n)),
        ),
        (
            "unary operators",
            format!("fn f() {{ {}x; }}", "!".repeat(n)),
        ),
        (
            "binary chain",
            format!("fn f() {{ a{}; }}", " + a".repeat(n)),
        ),
        (
            "method chain",
            format!("fn f() {{ a{}; }}", ".b()".repeat(n)),
        ),
        (
            "else-if chain",
            format!("fn f() {{ if a {{}}{} }}", " else if a {}".repeat(n)),
        ),
        (
            "closures",
            format!("fn f() {{ let g = {}x; }}", "|a, b| ".repeat(n)),
        ),
        ("references", format!("type T = {}u8;", "&".repeat(n))),
        (
            "inline modules",
            format!("{}{}", "mod m { ".repeat(n), "}".repeat(n)),
        ),
    ]
}

#[test]
fn any_nesting_depth_is_reported_unanalysable_never_a_crash() {
    for (what, src) in nested(200_000) {
        let dir = krate(&[("src/lib.rs", &src)]);
        let report = lint_within(dir.path(), Duration::from_secs(60));
        assert!(
            report
                .problems
                .iter()
                .any(|p| matches!(p, LintError::TooDeep { .. })),
            "{what}: {:?}",
            problems(&report)
        );
        assert!(problems(&report)[0].contains("unanalysable: nested more than"));
    }
}

#[test]
fn nesting_that_used_to_crash_is_analysed() {
    // The depths at which the lint overflowed its stack before (issue 18).
    for (what, n) in [
        ("blocks", 1_641),
        ("generic types", 1_103),
        ("parentheses", 1_500),
    ] {
        let src = nested(n).into_iter().find(|(w, _)| *w == what).unwrap().1;
        let dir = krate(&[("src/lib.rs", &src)]);
        let report = lint_within(dir.path(), Duration::from_secs(60));
        assert!(
            report.problems.is_empty(),
            "{what}: {:?}",
            problems(&report)
        );
    }
    // And a violation at the bottom of 1,641 blocks is found.
    let n = 1_641;
    let src = format!(
        "{TOOL}fn t() {{ {}std::fs::write(\"/x\", b\"\");{} }}",
        "{".repeat(n),
        "}".repeat(n)
    );
    let dir = krate(&[("src/lib.rs", &src)]);
    let report = lint_within(dir.path(), Duration::from_secs(60));
    assert!(report.problems.is_empty(), "{:?}", problems(&report));
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].call, "std::fs::write");
}

#[test]
fn a_module_that_includes_its_own_file_is_a_cycle() {
    let dir = krate(&[
        (
            "src/lib.rs",
            "#[path = \"lib.rs\"] mod again;\nmod inner;\n",
        ),
        (
            "src/inner.rs",
            "#[path = \"lib.rs\"] mod back;\n#[path = \"inner.rs\"] mod me;\n",
        ),
    ]);
    let report = lint_within(dir.path(), Duration::from_secs(20));
    let cycles: Vec<String> = report
        .problems
        .iter()
        .filter(|p| matches!(p, LintError::ModuleCycle { .. }))
        .map(|p| p.to_string())
        .collect();
    assert_eq!(cycles.len(), 3, "{:?}", problems(&report));
    assert!(
        cycles[0].contains("module `crate_under_lint::again` includes"),
        "{cycles:?}"
    );
}

#[test]
fn exponentially_many_path_modules_stop_at_the_module_limit() {
    // Each file names the next one twice: 2^30 modules if followed blindly.
    let mut files = vec![(
        "src/lib.rs".to_string(),
        "#[path = \"m0.rs\"] mod a;\n#[path = \"m0.rs\"] mod b;\n".to_string(),
    )];
    for i in 0..30 {
        files.push((
            format!("src/m{i}.rs"),
            format!(
                "#[path = \"m{n}.rs\"] mod a;\n#[path = \"m{n}.rs\"] mod b;\n",
                n = i + 1
            ),
        ));
    }
    files.push(("src/m30.rs".into(), "pub fn leaf() {}\n".into()));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let dir = krate(&files);
    let report = lint_within(dir.path(), Duration::from_secs(120));
    assert!(
        report
            .problems
            .iter()
            .any(|p| matches!(p, LintError::TooManyModules { .. })),
        "{:?}",
        problems(&report).first()
    );
}

#[test]
fn glob_imports_resolve_in_linear_time() {
    // Three glob imports did not finish in 590 s before; two took 15.7 s.
    let src = format!(
        "use core::arch::x86::*;\nuse core::arch::x86_64::*;\nuse std::collections::*;\n\
         use std::io::*;\nuse std::fs::*;\n\
         mod a {{ pub use super::*; pub use crate::b::*; pub fn helper() {{}} }}\n\
         mod b {{ pub use super::*; pub use crate::a::*; }}\n\
         use a::*;\nuse b::*;\n\
         {TOOL}fn t() {{ unknown(); other::path(); helper(); write(\"/x\", b\"\"); }}\n"
    );
    let dir = krate(&[("src/lib.rs", &src)]);
    let (report, took) = timed(dir.path(), Duration::from_secs(60));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let calls: Vec<&str> = report.findings.iter().map(|f| f.call.as_str()).collect();
    assert_eq!(calls, ["std::fs::write"], "{:?}", report.findings);
}

#[test]
fn children_re_exported_by_glob_that_glob_their_parent_stay_linear() {
    // The shape of web-sys: one module re-exports thousands of children by glob, and each child
    // globs its parent back; a tool in each child asks for a name defined nowhere.
    let n = 3_000;
    let mut src = String::from("pub use features::*;\npub mod features {\n");
    for i in 0..n {
        src.push_str(&format!(
            "pub use gen_{i}::*;\npub mod gen_{i} {{ use super::*; use std::io::*; pub struct T{i};\n\
             {TOOL}fn t{i}() {{ not_defined_anywhere(); std::fs::write(\"/x\", b\"\"); }} }}\n"
        ));
    }
    src.push_str("}\n");
    let dir = krate(&[("src/lib.rs", &src)]);
    let (report, took) = timed(dir.path(), Duration::from_secs(120));
    assert_eq!(report.tools, n);
    assert_eq!(report.findings.len(), n);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn deeply_nested_macro_calls_take_linear_time() {
    // 20,000 nested `m!(…)` took 64 s before.
    let n = 20_000;
    let src = format!(
        "macro_rules! m {{ ($($t:tt)*) => {{ $($t)* }} }}\n{TOOL}fn t() {{ {}std::fs::write(\"/x\", b\"\"){}; }}\n",
        "m!(".repeat(n),
        ")".repeat(n)
    );
    let dir = krate(&[("src/lib.rs", &src)]);
    let (report, took) = timed(dir.path(), Duration::from_secs(60));
    assert!(report.problems.is_empty(), "{:?}", problems(&report));
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        report.findings.iter().any(|f| f.call == "std::fs::write"),
        "{:?}",
        report.findings
    );
}

#[test]
fn special_files_are_never_opened() {
    let fifo_dir = krate(&[("src/lib.rs", "#[path = \"pipe.rs\"] mod pipe;\n")]);
    let made = std::process::Command::new("mkfifo")
        .arg(fifo_dir.path().join("src/pipe.rs"))
        .status();
    if !made.is_ok_and(|s| s.success()) {
        println!("skipped the FIFO case: mkfifo is not available");
    } else {
        let report = lint_within(fifo_dir.path(), Duration::from_secs(20));
        assert!(
            matches!(report.problems.as_slice(), [LintError::NotAFile(_)]),
            "{:?}",
            problems(&report)
        );
        assert!(problems(&report)[0].contains("is not a regular file"));
    }
    let zero = krate(&[("src/lib.rs", "#[path = \"/dev/zero\"] mod zero;\n")]);
    let report = lint_within(zero.path(), Duration::from_secs(20));
    assert!(
        matches!(report.problems.as_slice(), [LintError::NotAFile(_)]),
        "{:?}",
        problems(&report)
    );
    // A `Cargo.toml` that is a FIFO is not opened either.
    let manifest_fifo = krate(&[("src/lib.rs", "")]);
    let made = std::process::Command::new("mkfifo")
        .arg(manifest_fifo.path().join("Cargo.toml"))
        .status();
    if made.is_ok_and(|s| s.success()) {
        let (send, receive) = mpsc::channel();
        let path = manifest_fifo.path().to_path_buf();
        std::thread::spawn(move || {
            let _ = send.send(lint(&path, &Options::default()).map(|_| ()));
        });
        let result = receive
            .recv_timeout(Duration::from_secs(20))
            .expect("the lint returns");
        assert!(matches!(result, Err(LintError::NotAFile(_))), "{result:?}");
    }
    let dir = krate(&[("src/lib.rs", "#[path = \"..\"] mod up;\n")]);
    let report = lint_within(dir.path(), Duration::from_secs(20));
    assert!(
        matches!(report.problems.as_slice(), [LintError::NotAFile(_)]),
        "{:?}",
        problems(&report)
    );
}

#[test]
fn oversized_files_are_refused_before_parsing() {
    let big = format!(
        "{TOOL}fn t() {{}}\n{}",
        "// padding padding padding padding padding padding padding padding\n".repeat(80_000)
    );
    assert!(big.len() as u64 > manifest_verify::lint::MAX_FILE_BYTES);
    let dir = krate(&[("src/lib.rs", "mod big;\n"), ("src/big.rs", &big)]);
    let report = lint_within(dir.path(), Duration::from_secs(20));
    assert!(
        matches!(report.problems.as_slice(), [LintError::TooLarge { .. }]),
        "{:?}",
        problems(&report)
    );
    assert!(problems(&report)[0].contains("is larger than 4194304 bytes"));
}

#[test]
fn raw_identifier_modules_are_found_without_the_prefix() {
    let dir = krate(&[
        ("src/lib.rs", "mod r#ref;\n"),
        (
            "src/ref.rs",
            &format!("{TOOL}fn t() {{ std::fs::write(\"/x\", b\"\"); }}\n"),
        ),
    ]);
    let report = lint_within(dir.path(), Duration::from_secs(20));
    assert!(report.problems.is_empty(), "{:?}", problems(&report));
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].at.file, "src/ref.rs");
}

#[test]
fn ten_thousand_findings_render_quickly_in_every_format() {
    let body = "std::fs::write(\"/x\", b\"\");\n".repeat(10_000);
    let dir = krate(&[("src/lib.rs", &format!("{TOOL}fn t() {{\n{body}}}\n"))]);
    let report = lint_within(dir.path(), Duration::from_secs(60));
    assert_eq!(report.findings.len(), 10_000);
    for (format, render) in [
        ("human", render::human as fn(&Report) -> String),
        ("json", render::json),
        ("sarif", render::sarif),
    ] {
        let start = Instant::now();
        let text = render(&report);
        let took = start.elapsed();
        assert!(took < Duration::from_secs(8), "{format} took {took:?}");
        assert!(text.len() > 10_000);
    }
}

#[test]
fn a_label_past_column_65535_is_printed_without_its_source() {
    let padding = " ".repeat(70_000);
    let src = format!("{TOOL}fn t() {{ {padding}std::fs::write(\"/x\", b\"\"); }}\n");
    let dir = krate(&[("src/lib.rs", &src)]);
    let report = lint_within(dir.path(), Duration::from_secs(20));
    assert_eq!(report.findings.len(), 1);
    assert!(report.findings[0].at.column > 65_535);
    let human = render::human(&report);
    assert!(human.contains("at src/lib.rs:2:70010"), "{human}");
    // A short line keeps its source excerpt and label.
    let dir = krate(&[(
        "src/lib.rs",
        &format!("{TOOL}fn t() {{\n    std::fs::write(\"/x\", b\"\");\n}}\n"),
    )]);
    let human = render::human(&lint_within(dir.path(), Duration::from_secs(20)));
    assert!(human.contains("3 │     std::fs::write"), "{human}");
    assert!(human.contains("lint.fs.write"), "{human}");
}

#[test]
fn sarif_carries_files_that_do_not_parse() {
    let dir = krate(&[
        ("src/lib.rs", &format!("mod broken;\n{TOOL}fn t() {{}}\n")),
        ("src/broken.rs", "fn oops( {\n"),
    ]);
    let report = lint_within(dir.path(), Duration::from_secs(20));
    assert_eq!(report.problems.len(), 1, "{:?}", problems(&report));
    let sarif: serde_json::Value = serde_json::from_str(&render::sarif(&report)).unwrap();
    let run = &sarif["runs"][0];
    assert_eq!(run["invocations"][0]["executionSuccessful"], false);
    let note = &run["invocations"][0]["toolExecutionNotifications"][0];
    assert_eq!(note["level"], "error");
    assert!(note["message"]["text"]
        .as_str()
        .unwrap()
        .contains("cannot parse"));
    let result = &run["results"][0];
    assert_eq!(result["ruleId"], "lint.incomplete");
    let location = &result["locations"][0]["physicalLocation"];
    assert!(location["artifactLocation"]["uri"]
        .as_str()
        .unwrap()
        .ends_with("src/broken.rs"));
    assert_eq!(location["region"]["startLine"], 1);
    // Every rule is listed, so indices are stable; the result points at its own.
    let index = result["ruleIndex"].as_u64().unwrap() as usize;
    assert_eq!(
        run["tool"]["driver"]["rules"][index]["id"],
        "lint.incomplete"
    );
    // The binary still exits 2: the verdict is incomplete.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolpolicy-lint"))
        .arg(dir.path())
        .args(["--format", "sarif"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed["runs"][0]["results"][0]["ruleId"],
        "lint.incomplete"
    );
}

#[test]
fn long_method_chains_are_typed_in_polynomial_time() {
    // Typing a receiver walks its chain: once per level, not once per level per level (a
    // 1,000-call `join` chain took 23 s of CPU when each level re-typed the rest).
    let n = 1_000;
    let src = format!(
        "{TOOL}fn t() {{ std::path::Path::new(\"x\"){}.exists(); x{}; S{}; }}\n\
         struct S;\nimpl S {{ fn m(&self) -> S {{ S }} }}\n",
        ".join(\"b\")".repeat(n),
        ".b()".repeat(n),
        ".m()".repeat(n),
    );
    let dir = krate(&[("src/lib.rs", &src)]);
    let (report, took) = timed(dir.path(), Duration::from_secs(30));
    assert!(report.problems.is_empty(), "{:?}", problems(&report));
    // The chain's `exists()` reads: found through 1,000 `join`s.
    assert_eq!(report.findings.len(), 0, "fs.read is granted");
    assert!(took < Duration::from_secs(20), "{took:?}");
    let denied = src.replace("fs.read = [\"/data/**\"]", "net = deny");
    let dir = krate(&[("src/lib.rs", &denied)]);
    let (report, _) = timed(dir.path(), Duration::from_secs(30));
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    assert_eq!(report.findings[0].call, "std::path::Path::exists");
}
