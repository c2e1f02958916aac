// truth: env
// tier1: env
// tier2: env
// why: `env::vars()` reads every variable: a violation under an env allow-list

#[tool(policy(env = ["HOME"]))]
fn t(p: String) -> Result<String, ToolError> {
    let _n = std::env::vars().count();
    Ok(String::new())
}
