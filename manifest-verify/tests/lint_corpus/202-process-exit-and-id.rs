// truth: clean
// tier1: clean
// tier2: clean
// why: `process::exit` and `process::id` use no capability

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    if p.is_empty() {
        std::process::exit(std::process::id() as i32);
    }
    Ok(String::new())
}
