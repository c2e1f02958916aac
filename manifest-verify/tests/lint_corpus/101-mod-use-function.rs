// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: `use std::fs::write;` at module level

use std::fs::write;

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    write(&p, "x")?;
    Ok(String::new())
}
