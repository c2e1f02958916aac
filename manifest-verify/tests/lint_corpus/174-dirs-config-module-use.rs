// truth: env
// tier1: clean
// tier2: env
// why: `use dirs::config_dir;` at module level

use dirs::config_dir;

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = config_dir();
    Ok(String::new())
}
