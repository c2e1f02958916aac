// truth: fs.read
// tier1: fs.read
// tier2: fs.read
// why: `tokio::fs::read_dir` without `fs.read`

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = tokio::fs::read_dir(&p);
    Ok(String::new())
}
