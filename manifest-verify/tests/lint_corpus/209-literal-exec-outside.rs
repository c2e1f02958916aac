// truth: exec
// tier1: exec
// tier2: exec
// why: `Command::new("curl")` under `exec = ["git"]`

#[tool(policy(exec = ["git"]))]
fn t(p: String) -> Result<String, ToolError> {
    std::process::Command::new("curl").status()?;
    Ok(String::new())
}
