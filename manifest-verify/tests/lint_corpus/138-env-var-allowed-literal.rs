// truth: clean
// tier1: clean
// tier2: clean
// why: `env::var("HOME")` under `env = ["HOME"]`

#[tool(policy(env = ["HOME"]))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = std::env::var("HOME");
    Ok(String::new())
}
