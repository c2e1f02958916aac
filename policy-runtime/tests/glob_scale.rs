//! Issue 18 item 1: glob lists too large for one automaton are matched, never a panic.
//!
//! These inputs used to stop every binary with `ExceededSizeLimit` from the regex builder.

use std::time::Instant;

use policy_runtime::gate::check_path;
use policy_runtime::glob::{Glob, GlobErrorKind, GlobList};
use policy_runtime::tool::Access;
use policy_runtime::ToolPolicy;

#[test]
fn a_policy_of_thousands_of_project_globs_gates_quickly() {
    let globs: Vec<String> = (0..5_400)
        .map(|n| format!("\"/srv/agent/project-{n}/**\""))
        .collect();
    let json = format!(r#"{{"fs": {{"write": [{}]}}}}"#, globs.join(","));
    let policy = ToolPolicy::from_json_str("big.json", &json).unwrap();
    let start = Instant::now();
    for n in [0, 17, 4_321, 5_399] {
        let inside = format!("/srv/agent/project-{n}/src/main.rs");
        assert_eq!(
            check_path(&policy, &inside, Access::Write, None).as_deref(),
            Ok(inside.as_str())
        );
    }
    for outside in [
        "/srv/agent/project-5400/x",
        "/srv/agent/project-1x/y",
        "/srv/agent",
        "/etc/passwd",
        "/",
    ] {
        assert!(
            check_path(&policy, outside, Access::Write, None).is_err(),
            "{outside}"
        );
    }
    let per_check = start.elapsed() / 9;
    // Debug build, shared machine: generous, but far from the cost of scanning 5,400 globs
    // with one automaton each.
    assert!(per_check.as_millis() < 50, "{per_check:?} per check");
}

#[test]
fn lists_of_long_globs_fall_back_to_per_glob_matching() {
    // Twenty globs of 4,000 `?` each: one automaton for all of them exceeds the regex size
    // limit, which used to panic.
    let base = "?".repeat(4_000);
    let texts: Vec<String> = (0..20).map(|i| format!("/{base}{i}")).collect();
    let list = GlobList::new(&texts).unwrap();
    let hit = format!("/{}7", "é".repeat(4_000));
    assert!(list.is_match(&hit));
    assert_eq!(
        list.first_match(&hit).map(Glob::as_str),
        Some(texts[7].as_str())
    );
    assert!(!list.is_match(&format!("/{}7", "a".repeat(3_999))));
    assert!(!list.is_match("/a"));
}

#[test]
fn index_and_automaton_agree_on_declaration_order_and_every_shape() {
    // 40 globs (indexed) of mixed shapes: the first match is the first declared.
    let mut texts = vec![
        "/**/*.secret".to_string(),
        "/data/*/x".to_string(),
        "/data/**".to_string(),
        "/data/a/x".to_string(),
        "/etc/hosts".to_string(),
        "/{a,b}/c".to_string(),
    ];
    texts.extend((0..34).map(|i| format!("/pad/{i}/**")));
    let big = GlobList::new(&texts).unwrap();
    let small = GlobList::new(&texts[..6]).unwrap();
    for path in [
        "/data/a/x",
        "/data",
        "/data/k.secret",
        "/etc/hosts",
        "/etc/hosts/x",
        "/b/c",
        "/c",
        "/",
        "/pad/3",
        "/pad/3/deep/er",
        "/pad/34",
    ] {
        let expect = texts.iter().find(|t| Glob::new(t).unwrap().is_match(path));
        assert_eq!(
            big.first_match(path).map(Glob::as_str),
            expect.map(String::as_str),
            "{path}"
        );
        if !path.starts_with("/pad") {
            assert_eq!(big.is_match(path), small.is_match(path), "{path}");
        }
    }
}

#[test]
fn a_ten_kilobyte_glob_is_a_clear_load_error() {
    let glob = format!("/{}", "a*".repeat(5 << 10));
    let err = Glob::new(&glob).unwrap_err();
    assert!(matches!(err.kind(), GlobErrorKind::TooLong(_)));
    let json = format!(r#"{{"fs": {{"read": ["{glob}"]}}}}"#);
    let err = ToolPolicy::from_json_str("p.json", &json).unwrap_err();
    assert!(err.to_string().contains("limit of 4096"), "{err}");
}
