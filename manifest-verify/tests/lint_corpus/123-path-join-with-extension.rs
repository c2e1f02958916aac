// truth: fs.read
// tier1: fs.read
// tier2: fs.read
// why: `join` then `with_extension` then `metadata`

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = std::path::Path::new(&p).join("a").with_extension("txt").metadata();
    Ok(String::new())
}
