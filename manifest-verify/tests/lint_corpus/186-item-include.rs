// truth: unanalysable
// tier1: clean
// tier2: unanalysable
// why: a helper defined by an item-level `include!`

include!("generated.rs");

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    generated(&p);
    Ok(String::new())
}
