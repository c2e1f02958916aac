// truth: net
// tier1: net
// tier2: net
// why: `reqwest::blocking::get`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = reqwest::blocking::get(&p);
    Ok(String::new())
}
