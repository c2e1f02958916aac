// truth: fs.write
// tier1: fs.write
// tier2: fs.write
// why: `tokio::fs::write`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = tokio::fs::write(&p, "x");
    Ok(String::new())
}
