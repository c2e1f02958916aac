// truth: fs.write
// tier1: fs.write
// tier2: fs.write
// why: `use std::fs::write as save;` inside the body

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    use std::fs::write as save;
    save(&p, "x")?;
    Ok(String::new())
}
