use std::process::Command as Cmd;

/// Runs.
#[tool(policy(exec = deny))]
fn run() -> Result<String, ToolError> {
    let out = Cmd::new("ls").output()?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
