// truth: exec
// tier1: exec
// tier2: exec
// why: `tokio::process::Command::new`

#[tool(policy(exec = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = tokio::process::Command::new("ls").output();
    Ok(String::new())
}
