//! The runtime reads no Rust source: the capability lint's syntax-tree code lives in
//! `policy-analysis`, so an agent that links the runtime does not build syn.

/// The `[dependencies]` of the runtime's `Cargo.toml`, every target included.
fn dependencies() -> Vec<String> {
    let text = include_str!("../Cargo.toml");
    let manifest: toml::Table = text.parse().expect("Cargo.toml parses");
    let mut names: Vec<String> = Vec::new();
    let mut add = |table: Option<&toml::Value>| {
        if let Some(deps) = table.and_then(|t| t.as_table()) {
            names.extend(deps.keys().cloned());
        }
    };
    add(manifest.get("dependencies"));
    if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
        for target in targets.values() {
            add(target.get("dependencies"));
        }
    }
    names
}

#[test]
fn the_runtime_does_not_depend_on_syn() {
    let deps = dependencies();
    assert!(deps.contains(&"serde".to_string()), "{deps:?}");
    for parser in ["syn", "proc-macro2", "quote"] {
        assert!(!deps.iter().any(|d| d == parser), "{parser} in {deps:?}");
    }
}
