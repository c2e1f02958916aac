// truth: env
// tier1: env
// tier2: env
// why: `env::vars().filter(..)` still reads every variable

#[tool(policy(env = ["APP_*"]))]
fn t(p: String) -> Result<String, ToolError> {
    let _mine: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("APP_")).collect();
    Ok(String::new())
}
