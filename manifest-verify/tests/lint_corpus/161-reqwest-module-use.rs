// truth: net
// tier1: clean
// tier2: net
// why: `use reqwest::Client;` at module level

use reqwest::Client;

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = Client::new().get(&p).send();
    Ok(String::new())
}
