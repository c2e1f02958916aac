//! The agent's tools. Each declares what it may touch; the declaration is the manifest entry,
//! the gate's globs and the sandbox's rules at once.

use std::ffi::OsString;
use std::sync::Arc;

use policy_macros::tool;
use policy_runtime::command::ShellCommand;
use policy_runtime::tool::{CallContext, Tool, ToolError, ToolOutput};
use policy_runtime::{ReadPath, WritePath};

use crate::sandboxed;

const PROJECT: &str = "/tmp/toolpolicy-demo/project";

/// List the entries of a directory under the data folder.
#[tool(policy(fs.read = ["/tmp/toolpolicy-demo/data/**"], net = deny, exec = deny, risk = low))]
pub fn list_dir(path: ReadPath) -> Result<String, ToolError> {
    // `list`, `read_to_string` and `write` resolve the path beneath the folder its glob names:
    // a symlink out of it (`data/keys -> ../home/.ssh`) is refused, not followed.
    let names: Vec<String> = path
        .list()?
        .into_iter()
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    Ok(names.join("\n"))
}

/// Read a UTF-8 text file under the data folder.
#[tool(policy(fs.read = ["/tmp/toolpolicy-demo/data/**"], net = deny, exec = deny, risk = low))]
pub fn read_file(path: ReadPath) -> Result<String, ToolError> {
    Ok(path.read_to_string()?)
}

/// Write a Markdown report under the out folder. At most twice per task, and only after the
/// agent has read something.
#[tool(policy(fs.write = ["/tmp/toolpolicy-demo/out/**"], net = deny, exec = deny, risk = medium),
       constraints(max_invocations = 2, only_after = [read_file]))]
pub fn write_report(path: WritePath, body: String) -> Result<String, ToolError> {
    path.write(&body)?;
    Ok(format!("wrote {} bytes to {}", body.len(), path.display()))
}

/// Search files under the data folder for a pattern (runs `grep` in the sandbox).
#[tool(policy(fs.read = ["/tmp/toolpolicy-demo/data/**"], net = deny, exec = ["grep"], env = deny, risk = low),
       limits(timeout_ms = 5000, max_output_bytes = 65536, max_processes = 8, memory_bytes = 1073741824))]
pub fn grep(pattern: String, path: ReadPath, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
    let argv: Vec<OsString> = vec![
        "grep".into(),
        "-rn".into(),
        "--".into(),
        pattern.into(),
        path.into_path_buf().into(),
    ];
    sandboxed::run(grep::tool_spec(), argv, None, ctx)
}

/// Run the project's test suite (`unit` or `e2e`) with its own `run-tests.sh`, in the sandbox.
#[tool(policy(fs.read = ["/tmp/toolpolicy-demo/project/**"], fs.write = ["/tmp/toolpolicy-demo/project/target/**"],
              net = deny, exec = ["/bin/sh", "sed", "head", "cat", "curl"], env = ["HOME", "PATH", "LANG"], risk = medium),
       limits(timeout_ms = 20000, max_output_bytes = 65536, max_processes = 32, memory_bytes = 1073741824, cpu_seconds = 10))]
pub fn run_tests(suite: String, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
    if !suite
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ToolError::invalid_arguments(
            "suite: letters, digits, `-` and `_` only",
        ));
    }
    let argv: Vec<OsString> = vec!["/bin/sh".into(), "run-tests.sh".into(), suite.into()];
    sandboxed::run(run_tests::tool_spec(), argv, Some(PROJECT.into()), ctx)
}

/// Run a shell command in the project (`sh -c COMMAND` in the sandbox). Its command policy
/// judges the command line first: build and test commands and writes within the project (up
/// to level 2) run; pushes, downloads piped into a shell and git options that run programs are
/// denied before anything starts.
#[tool(policy(fs.read = ["/tmp/toolpolicy-demo/project/**"], fs.write = ["/tmp/toolpolicy-demo/project/target/**"],
              net = deny, exec = ["/bin/sh", "make"], env = ["HOME", "PATH", "LANG"], risk = medium),
       commands(max_level = 2, deny_args(git = ["--no-verify"]), chains = true),
       limits(timeout_ms = 20000, max_output_bytes = 65536, max_processes = 32, memory_bytes = 1073741824, cpu_seconds = 10))]
pub fn run_shell(command: ShellCommand, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
    let argv: Vec<OsString> = vec!["/bin/sh".into(), "-c".into(), command.into_string().into()];
    sandboxed::run(run_shell::tool_spec(), argv, Some(PROJECT.into()), ctx)
}

/// Fetch a URL from the status API (runs `curl` in the sandbox; only the API is reachable).
#[tool(policy(net = ["api.example.com:8080"], exec = ["curl"], env = deny, risk = medium),
       limits(timeout_ms = 10000, max_output_bytes = 1048576, max_processes = 8, memory_bytes = 1073741824))]
pub fn fetch_url(url: String, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ToolError::invalid_arguments(
            "url: an http:// or https:// URL",
        ));
    }
    let argv: Vec<OsString> = vec![
        "curl".into(),
        "-sS".into(),
        "--max-time".into(),
        "5".into(),
        "--".into(),
        url.into(),
    ];
    sandboxed::run(fetch_url::tool_spec(), argv, None, ctx)
}

/// Every tool of the agent.
pub fn all() -> Vec<Arc<dyn Tool>> {
    policy_runtime::tools![
        list_dir,
        read_file,
        write_report,
        grep,
        run_tests,
        run_shell,
        fetch_url
    ]
}

/// "Version 2" of the tools, as a pull request might propose it: `write_report` may now write
/// anywhere under the demo root, `fetch_url` may reach any subdomain of `example.com`, and
/// `run_shell` may run commands up to level 5 with no denied arguments.
/// The other tools are unchanged. The demo runs the verifier on this diff.
pub mod v2 {
    use super::*;

    /// List the entries of a directory under the data folder.
    #[tool(policy(fs.read = ["/tmp/toolpolicy-demo/data/**"], net = deny, exec = deny, risk = low))]
    pub fn list_dir(path: ReadPath) -> Result<String, ToolError> {
        super::list_dir(path)
    }

    /// Read a UTF-8 text file under the data folder.
    #[tool(policy(fs.read = ["/tmp/toolpolicy-demo/data/**"], net = deny, exec = deny, risk = low))]
    pub fn read_file(path: ReadPath) -> Result<String, ToolError> {
        super::read_file(path)
    }

    /// Write a Markdown report anywhere in the workspace.
    #[tool(policy(fs.write = ["/tmp/toolpolicy-demo/**"], net = deny, exec = deny, risk = low),
           constraints(only_after = [read_file]))]
    pub fn write_report(path: WritePath, body: String) -> Result<String, ToolError> {
        super::write_report(path, body)
    }

    /// Search files under the data folder for a pattern (runs `grep` in the sandbox).
    #[tool(policy(fs.read = ["/tmp/toolpolicy-demo/data/**"], net = deny, exec = ["grep"], env = deny, risk = low),
           limits(timeout_ms = 5000, max_output_bytes = 65536, max_processes = 8, memory_bytes = 1073741824))]
    pub fn grep(
        pattern: String,
        path: ReadPath,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        super::grep(pattern, path, ctx)
    }

    /// Run the project's test suite (`unit` or `e2e`) with its own `run-tests.sh`, in the sandbox.
    #[tool(policy(fs.read = ["/tmp/toolpolicy-demo/project/**"], fs.write = ["/tmp/toolpolicy-demo/project/target/**"],
                  net = deny, exec = ["/bin/sh", "sed", "head", "cat", "curl"], env = ["HOME", "PATH", "LANG"], risk = medium),
           limits(timeout_ms = 20000, max_output_bytes = 65536, max_processes = 32, memory_bytes = 1073741824, cpu_seconds = 10))]
    pub fn run_tests(suite: String, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        super::run_tests(suite, ctx)
    }

    /// Run a shell command in the project; version 2 lets it push and pipe.
    #[tool(policy(fs.read = ["/tmp/toolpolicy-demo/project/**"], fs.write = ["/tmp/toolpolicy-demo/project/target/**"],
                  net = deny, exec = ["/bin/sh", "make"], env = ["HOME", "PATH", "LANG"], risk = medium),
           commands(max_level = 5, chains = true),
           limits(timeout_ms = 20000, max_output_bytes = 65536, max_processes = 32, memory_bytes = 1073741824, cpu_seconds = 10))]
    pub fn run_shell(command: ShellCommand, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        super::run_shell(command, ctx)
    }

    /// Fetch a URL from any example.com API.
    #[tool(policy(net = ["*.example.com:8080"], exec = ["curl"], env = deny, risk = medium),
           limits(timeout_ms = 10000, max_output_bytes = 1048576, max_processes = 8, memory_bytes = 1073741824))]
    pub fn fetch_url(url: String, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        super::fetch_url(url, ctx)
    }

    /// Every tool of version 2.
    pub fn all() -> Vec<Arc<dyn Tool>> {
        policy_runtime::tools![
            list_dir,
            read_file,
            write_report,
            grep,
            run_tests,
            run_shell,
            fetch_url
        ]
    }
}
