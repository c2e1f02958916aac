// truth: clean
// tier1: clean
// tier2: clean
// why: `#[tracing::instrument]` keeps the body as written

#[tracing::instrument]
fn helper(p: &str) -> usize {
    p.len()
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    helper(&p);
    Ok(String::new())
}
