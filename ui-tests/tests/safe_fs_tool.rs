//! `#[tool]` functions that open their path arguments with the safe methods, dispatched by the
//! registry: the generated code binds each argument to the folder of the glob that admitted it,
//! so a symlink planted under that folder cannot lead the body out of it.

use policy_macros::tool;
use policy_runtime::macro_support::registry_of;
use policy_runtime::registry::ToolCall;
use policy_runtime::tool::ToolError;
use policy_runtime::{ReadPath, WritePath};
use serde_json::json;

/// Read a file in any `data` folder one level under /tmp.
#[tool(policy(fs.read = ["/tmp/*/data/**"]))]
#[allow(deprecated)] // the glob's folder is `/tmp`, as the widening warning says: that is the point
fn read_note(path: ReadPath) -> Result<String, ToolError> {
    Ok(path.read_to_string()?)
}

/// Write a file in any `data` folder one level under /tmp.
#[tool(policy(fs.write = ["/tmp/*/data/out/**"]))]
#[allow(deprecated)]
fn write_note(dest: WritePath, text: String) -> Result<String, ToolError> {
    dest.write(&text)?;
    Ok("written".into())
}

#[test]
fn dispatched_tools_stay_beneath_their_folder() {
    let dir = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("data/out")).unwrap();
    std::fs::write(root.join("data/note.txt"), "inside").unwrap();
    std::fs::write(root.join("secret.txt"), "SECRET").unwrap();
    // The glob's folder is `/tmp`: a link that climbs out of it, and an absolute one.
    std::os::unix::fs::symlink("../../../etc/hostname", root.join("data/up")).unwrap();
    std::os::unix::fs::symlink(root.join("secret.txt"), root.join("data/abs")).unwrap();
    // The write glob's folder is `/tmp`, too: `out/escape` leads to `/etc` from there.
    std::os::unix::fs::symlink("../../../../etc", root.join("data/out/escape")).unwrap();

    let registry = registry_of(policy_runtime::tools![read_note, write_note]).unwrap();
    let mut run = registry.start_invocation();
    let call = |run: &mut policy_runtime::Invocation<'_>, name: &str, args| {
        run.call_blocking(ToolCall::new(name, args))
    };
    let at = |rel: &str| root.join(rel).to_str().unwrap().to_string();

    let ok = call(&mut run, "read_note", json!({"path": at("data/note.txt")}));
    assert_eq!(ok.content, "inside");
    for rel in ["data/up", "data/abs"] {
        let refused = call(&mut run, "read_note", json!({"path": at(rel)}));
        assert!(refused.error().is_some(), "{rel}: {refused:?}");
        assert!(
            refused.content.contains("argument `path`")
                && refused.content.contains("leads outside `/tmp`"),
            "{}",
            refused.content
        );
    }
    let written = call(
        &mut run,
        "write_note",
        json!({"dest": at("data/out/a.md"), "text": "hi"}),
    );
    assert!(written.is_ok(), "{written:?}");
    let refused = call(
        &mut run,
        "write_note",
        json!({"dest": at("data/out/escape/pwned"), "text": "x"}),
    );
    assert!(
        refused.content.contains("leads outside `/tmp`"),
        "{refused:?}"
    );
    assert!(!std::path::Path::new("/etc/pwned").exists());
}
