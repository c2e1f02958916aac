// truth: clean
// tier1: clean
// tier2: clean
// why: `env::vars()` with env unspecified (inherit)

#[tool(policy(net = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = std::env::vars().count();
    Ok(String::new())
}
