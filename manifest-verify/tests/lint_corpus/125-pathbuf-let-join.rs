// truth: fs.read
// tier1: fs.read
// tier2: fs.read
// why: a `PathBuf` bound by `let`, joined, then `is_file()`

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let base = std::path::PathBuf::from("/data");
    let file = base.join(&p);
    let _ = file.is_file();
    Ok(String::new())
}
