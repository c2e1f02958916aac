// truth: clean
// tier1: clean
// tier2: clean
// why: an item-level `include!` the tool never calls into

include!("generated.rs");

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = std::fs::read(&p)?;
    Ok(String::new())
}
