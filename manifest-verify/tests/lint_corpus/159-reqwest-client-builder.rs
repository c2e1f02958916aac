// truth: net
// tier1: net
// tier2: net
// why: `reqwest::ClientBuilder::new().build()`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = reqwest::ClientBuilder::new().build();
    Ok(String::new())
}
