// truth: exec
// tier1: clean
// tier2: exec
// why: `use std::process::Command;` at module level

use std::process::Command;

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    Command::new("ls").status()?;
    Ok(String::new())
}
