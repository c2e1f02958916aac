// truth: unanalysable
// tier1: clean
// tier2: unanalysable
// why: an attribute macro under `#[tool]` may rewrite the tool itself

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
#[my_macros::rewrite]
fn t(p: String) -> Result<String, ToolError> {
    let _ = p.len();
    Ok(String::new())
}
