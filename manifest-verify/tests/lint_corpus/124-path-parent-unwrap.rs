// truth: fs.read
// tier1: fs.read
// tier2: fs.read
// why: `parent().unwrap().read_dir()`

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = std::path::Path::new(&p).parent().unwrap().read_dir();
    Ok(String::new())
}
