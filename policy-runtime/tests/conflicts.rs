//! The cross-field rules of a policy (`policy_runtime::conflict`) hold for every file source:
//! a JSON manifest, a single-tool JSON policy and a TOML policy each refuse a contradiction
//! with the file, line and field; a spec built by hand is refused where it is registered. (The
//! `#[tool]` attribute's side is in ui-tests.)

use policy_runtime::{Manifest, ToolPolicy};

#[test]
fn a_manifest_tool_that_must_run_after_itself_is_refused_at_its_line() {
    let text = r#"{
  "manifest_version": 1,
  "tools": {
    "fetch": {},
    "summarize": {
      "constraints": { "only_after": ["fetch", "summarize"] }
    }
  }
}
"#;
    let err = Manifest::from_json_str("tool-manifest.json", text).unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("`summarize` can never run if it must run after itself"),
        "{shown}"
    );
    assert!(shown.contains("constraints.only_after"), "{shown}");
    assert_eq!(err.line(), Some(6), "{shown}");
    // The same list under another tool is fine.
    let ok = text.replace("\"fetch\", \"summarize\"", "\"fetch\"");
    assert!(Manifest::from_json_str("tool-manifest.json", &ok).is_ok());
}

#[test]
fn a_manifest_forbidden_tool_with_constraints_is_refused_at_the_key() {
    let text = r#"{
  "manifest_version": 1,
  "tools": {
    "wipe": {
      "constraints": {
        "forbidden": true,
        "requires_approval": true
      }
    }
  }
}
"#;
    let err = Manifest::from_json_str("m.json", text).unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("`requires_approval` contradicts `forbidden = true`"),
        "{shown}"
    );
    assert!(shown.contains("tools.wipe.constraints"), "{shown}");
    assert_eq!((err.line(), err.column()), (Some(7), Some(9)), "{shown}");
    assert!(Manifest::from_json_str(
        "m.json",
        &text.replace(
            "\"requires_approval\": true",
            "\"requires_approval\": false"
        )
    )
    .is_ok());
}

/// At the contradicting key's line and column (not the `[constraints]` header), in a table or
/// an inline table, with the key underlined in the rendered diagnostic.
#[test]
fn a_toml_policy_with_a_contradiction_is_refused_at_the_key() {
    let text = "risk = \"high\"\n\n[constraints]\nforbidden = true\nmax_invocations = 3\n";
    let err = ToolPolicy::from_toml_str("wipe.toml", text).unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("`max_invocations` contradicts `forbidden = true`"),
        "{shown}"
    );
    assert!(shown.starts_with("wipe.toml:5:1: "), "{shown}");
    assert_eq!((err.line(), err.column()), (Some(5), Some(1)), "{shown}");
    let label = miette::Diagnostic::labels(&err)
        .and_then(|mut l| l.next())
        .expect("a label");
    let at = label.offset()..label.offset() + label.len();
    assert_eq!(&text[at], "max_invocations", "{shown}");

    let inline =
        "risk = \"high\"\nconstraints = { forbidden = true, \"requires_approval\" = true }\n";
    let err = ToolPolicy::from_toml_str("wipe.toml", inline).unwrap_err();
    assert_eq!((err.line(), err.column()), (Some(2), Some(35)), "{err}");
    // Other TOML errors keep their own place.
    let err = ToolPolicy::from_toml_str("p.toml", "[constraints]\nforbiden = true\n").unwrap_err();
    assert_eq!((err.line(), err.column()), (Some(2), Some(1)), "{err}");
}

#[test]
fn a_single_tool_file_is_checked_against_the_tool_it_is_loaded_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fetch.toml");
    std::fs::write(&path, "[constraints]\nonly_after = [\"fetch\"]\n").unwrap();
    let err = ToolPolicy::load(&path, Some("fetch")).unwrap_err();
    assert!(
        err.to_string()
            .contains("`fetch` can never run if it must run after itself"),
        "{err}"
    );
    assert!(err.to_string().contains("constraints.only_after"), "{err}");
    assert!(ToolPolicy::load(&path, Some("summarize")).is_ok());
    assert!(ToolPolicy::load(&path, None).is_ok());
    let json = dir.path().join("wipe.json");
    std::fs::write(
        &json,
        r#"{"constraints": {"forbidden": true, "only_after": ["a"]}}"#,
    )
    .unwrap();
    let err = ToolPolicy::load(&json, None).unwrap_err();
    assert!(
        err.to_string()
            .contains("`only_after` contradicts `forbidden = true`"),
        "{err}"
    );
}

/// A spec built by hand (the builder API, not `#[tool]`) is checked where it is registered,
/// with the same typed conflict and the same words as a manifest entry.
#[test]
fn a_hand_built_spec_with_a_contradiction_is_refused_at_registration() {
    use policy_runtime::conflict::Conflict;
    use policy_runtime::registry::{Registry, RegistryError};
    use policy_runtime::tool::{fn_tool, ToolSpec};

    let register = |name: &str, json: &str| {
        let policy = ToolPolicy::from_json_str("inline", json).unwrap();
        let tool = fn_tool(ToolSpec::new(name, policy), |_, _| Ok("ran".into()));
        Registry::new().register(tool).map(|_| ()).err()
    };
    let itself = register(
        "summarize",
        r#"{"constraints": {"only_after": ["fetch", "summarize"]}}"#,
    )
    .expect("a tool that must run after itself was registered");
    assert_eq!(
        itself,
        RegistryError::Conflict {
            tool: "summarize".into(),
            conflict: Conflict::OnlyAfterItself {
                tool: "summarize".into()
            },
        }
    );
    // The manifest's words for the same entry.
    let manifest = r#"{"manifest_version": 1, "tools": {"summarize": {"constraints": {"only_after": ["fetch", "summarize"]}}}}"#;
    let loaded = Manifest::from_json_str("m.json", manifest).unwrap_err();
    assert!(
        loaded.to_string().contains(&itself.to_string()),
        "{loaded} / {itself}"
    );

    // Built field by field, past the JSON reader's own check of `forbidden`.
    let mut policy = ToolPolicy::default();
    policy.constraints.forbidden = Some(true);
    policy.constraints.max_invocations = Some(2);
    let tool = fn_tool(ToolSpec::new("wipe", policy), |_, _| Ok("ran".into()));
    let err = Registry::new().register(tool).map(|_| ()).unwrap_err();
    assert_eq!(
        err,
        RegistryError::Conflict {
            tool: "wipe".into(),
            conflict: Conflict::ContradictsForbidden {
                key: "max_invocations"
            },
        }
    );
    assert!(
        err.to_string().contains("constraints.max_invocations"),
        "{err}"
    );

    assert_eq!(
        register("summarize", r#"{"constraints": {"only_after": ["fetch"]}}"#),
        None
    );
}
