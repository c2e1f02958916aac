// truth: net
// tier1: clean
// tier2: net
// why: `.post` on a `&reqwest::Client` parameter

fn send(c: &reqwest::Client, u: &str) {
    let _ = c.post(u).send();
}

fn client() -> &'static reqwest::Client {
    unimplemented!()
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    send(client(), &p);
    Ok(String::new())
}
