// truth: clean
// tier1: clean
// tier2: clean
// why: a closure bound to `write`

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let write = |x: &str| x.len();
    write(&p);
    Ok(String::new())
}
