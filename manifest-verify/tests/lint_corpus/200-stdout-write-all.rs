// truth: clean
// tier1: clean
// tier2: clean
// why: `stdout().write_all` is not a file write

use std::io::Write;

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    std::io::stdout().write_all(p.as_bytes())?;
    Ok(String::new())
}
