// truth: env
// tier1: clean
// tier2: env
// why: `use std::env;` then `env::vars_os()` under an allow-list

use std::env;

#[tool(policy(env = ["HOME"]))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = env::vars_os().count();
    Ok(String::new())
}
