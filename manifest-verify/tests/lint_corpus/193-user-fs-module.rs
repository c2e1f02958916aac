// truth: clean
// tier1: clean
// tier2: clean
// why: the crate's own `mod fs` with a `write`

mod fs {
    pub fn write(_p: &str) {}
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    fs::write(&p);
    Ok(String::new())
}
