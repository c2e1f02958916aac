// truth: clean
// tier1: clean
// tier2: clean
// why: a read of a literal inside `fs.read`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = std::fs::read("/data/a.csv")?;
    Ok(String::new())
}
