// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: `use std::fs::write as save;` at module level

use std::fs::write as save;

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    save(&p, "x")?;
    Ok(String::new())
}
