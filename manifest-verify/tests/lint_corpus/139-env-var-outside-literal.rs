// truth: env
// tier1: env
// tier2: env
// why: `env::var("AWS_SECRET_ACCESS_KEY")` under `env = ["HOME"]`

#[tool(policy(env = ["HOME"]))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = std::env::var("AWS_SECRET_ACCESS_KEY");
    Ok(String::new())
}
