// truth: fs.read
// tier1: fs.read
// tier2: fs.read
// why: `Path::new(..).join(..).exists()`: the type carries through `join`

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = std::path::Path::new("/data").join(&p).exists();
    Ok(String::new())
}
