// truth: net
// tier1: net
// tier2: net
// why: `reqwest::Client::new().get(..)`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = reqwest::Client::new().get(&p).send();
    Ok(String::new())
}
