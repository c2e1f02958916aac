// truth: fs.write
// tier1: fs.write
// tier2: fs.write
// why: `use std::fs;` inside the body: both tiers see it

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    use std::fs;
    fs::write(&p, "x")?;
    Ok(String::new())
}
