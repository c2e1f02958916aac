// truth: unanalysable
// tier1: clean
// tier2: unanalysable
// why: an attribute proc macro on a helper may rewrite its body

#[my_macros::rewrite]
fn helper(p: &str) {
    let _ = p.len();
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    helper(&p);
    Ok(String::new())
}
