// truth: env
// tier1: clean
// tier2: env
// why: `use std::env;` at module level

use std::env;

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = env::var("HOME");
    Ok(String::new())
}
