// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a helper in the same file writes

fn helper(p: &str) {
    std::fs::write(p, "x").unwrap();
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    helper(&p);
    Ok(String::new())
}
