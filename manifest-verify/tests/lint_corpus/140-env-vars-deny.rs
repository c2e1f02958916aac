// truth: env
// tier1: env
// tier2: env
// why: `env::vars()` under `env = deny`

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = std::env::vars().count();
    Ok(String::new())
}
