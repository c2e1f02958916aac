// truth: clean
// tier1: clean
// tier2: clean
// why: `join` and `display` do not touch the file system

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let s = std::path::Path::new("/data").join(&p).display().to_string();
    let _ = s;
    Ok(String::new())
}
