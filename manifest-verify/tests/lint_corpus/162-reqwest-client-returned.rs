// truth: net
// tier1: clean
// tier2: net
// why: a helper returns a `reqwest::Client`; the tool calls `.get`

fn client() -> reqwest::Client {
    unimplemented!()
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let c = client();
    let _ = c.get(&p).send();
    Ok(String::new())
}
