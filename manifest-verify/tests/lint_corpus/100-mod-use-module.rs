// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: `use std::fs;` at module level, `fs::write` in the tool

use std::fs;

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    fs::write(&p, "x")?;
    Ok(String::new())
}
