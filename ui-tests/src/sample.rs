//! Sample tools: every DSL form, sync and async, free functions and methods.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use policy_macros::{tool, toolset};
use policy_runtime::tool::{CallContext, Tool, ToolError};
use policy_runtime::{ReadPath, WritePath};

/// How many times a tool body actually ran, to prove that denied calls never reach it.
pub static BODY_RUNS: AtomicU32 = AtomicU32::new(0);

/// Read a UTF-8 file.
#[tool(policy(fs.read = ["/data/**"], net = deny, risk = low))]
pub fn read_file(path: ReadPath) -> Result<String, ToolError> {
    BODY_RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("read {}", path.display()))
}

/// Write a report file.
///
/// The body is written as given.
#[tool(policy(fs.read = ["/data/**"], fs.write = "/out/**", net = deny, exec = allow, env = ["HOME"], risk = medium),
       constraints(max_invocations = 3, only_after = [fetch]),
       limits(timeout_ms = 5000))]
pub async fn write_report(path: WritePath, body: String) -> Result<String, ToolError> {
    BODY_RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("wrote {} bytes to {}", body.len(), path.display()))
}

/// Fetch a URL.
#[tool(policy(net = ["api.example.com:443", "*.example.org:443"], fs.read = none, risk = high),
       constraints(requires_approval = true))]
pub fn fetch(url: &str, ctx: &CallContext) -> String {
    BODY_RUNS.fetch_add(1, Ordering::SeqCst);
    format!("fetched {url} in {}", ctx.tool)
}

/// Search with ripgrep.
#[tool(policy(exec = ["rg", "/usr/bin/git"], env = deny, fs.read = ["/src/**/*.rs"]),
       limits(timeout_ms = 1000, memory_bytes = 268435456, cpu_seconds = 2, max_processes = 4,
              max_output_bytes = 65536, max_file_bytes = 1048576, max_open_files = 64),
       name = "grep", description = "Search source files.")]
#[allow(deprecated)] // the `/src/**/*.rs` widening warning is expected here
pub fn search(pattern: String, paths: Vec<ReadPath>, max: Option<u32>) -> serde_json::Value {
    BODY_RUNS.fetch_add(1, Ordering::SeqCst);
    serde_json::json!({"pattern": pattern, "paths": paths.len(), "max": max})
}

/// Delete everything.
#[tool(policy(fs.write = ["/**"], exec = deny, net = allow, env = none, risk = critical),
       constraints(forbidden = true))]
pub fn wipe() {
    BODY_RUNS.fetch_add(1, Ordering::SeqCst);
}

/// A type alias of a path argument is still judged as a write.
pub type Target = Option<WritePath>;

/// Copy a file.
#[tool(policy(fs(read = "/data/**", write = "/out/**"), exec = none))]
pub fn copy(from: ReadPath, to: Target) -> Result<(), std::io::Error> {
    BODY_RUNS.fetch_add(1, Ordering::SeqCst);
    let _ = (from, to);
    Ok(())
}

/// Append a line to a log; `file` is a plain string declared as a write target.
#[tool(policy(fs.read = "/data/**", fs.write = "/out/**"), paths(file = write))]
pub fn append(file: String, line: String) -> String {
    BODY_RUNS.fetch_add(1, Ordering::SeqCst);
    format!("{file}: {line}")
}

/// A notes store whose tools share one instance.
#[derive(Default)]
pub struct Notes {
    notes: std::sync::Mutex<Vec<String>>,
}

#[toolset]
impl Notes {
    /// Add a note.
    #[tool(policy(fs.read = none, net = deny), constraints(max_invocations = 2))]
    pub fn add_note(&self, text: String) -> String {
        BODY_RUNS.fetch_add(1, Ordering::SeqCst);
        let mut notes = self.notes.lock().unwrap();
        notes.push(text);
        format!("{} notes", notes.len())
    }

    /// List the notes.
    #[tool(policy(net = deny), constraints(only_after = [add_note]))]
    pub async fn list_notes(&self) -> String {
        BODY_RUNS.fetch_add(1, Ordering::SeqCst);
        self.notes.lock().unwrap().join("\n")
    }

    /// The version of the store.
    #[tool(policy(net = deny, risk = low))]
    pub fn notes_version() -> &'static str {
        "1"
    }

    /// Not a tool: stays an ordinary method.
    pub fn count(&self) -> usize {
        self.notes.lock().unwrap().len()
    }
}

/// Every sample tool.
pub fn all_tools() -> Vec<Arc<dyn Tool>> {
    let mut tools =
        policy_runtime::tools![read_file, write_report, fetch, search, wipe, copy, append];
    tools.extend(Arc::new(Notes::default()).tools());
    tools
}
