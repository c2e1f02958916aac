// truth: fs.write
// tier1: fs.write
// tier2: fs.write
// why: `OpenOptions` bound by `let`, then `.write(true)`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true);
    o.open(&p)?;
    Ok(String::new())
}
