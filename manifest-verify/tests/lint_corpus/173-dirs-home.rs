// truth: env
// tier1: env
// tier2: env
// why: `dirs::home_dir()` reads `HOME`

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = dirs::home_dir();
    Ok(String::new())
}
