// truth: env
// tier1: env
// tier2: env
// why: `env::vars_os()` under an env allow-list

#[tool(policy(env = ["HOME"]))]
fn t(p: String) -> Result<String, ToolError> {
    for (_k, _v) in std::env::vars_os() {}
    Ok(String::new())
}
