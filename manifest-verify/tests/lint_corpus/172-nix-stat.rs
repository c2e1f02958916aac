// truth: fs.read
// tier1: fs.read
// tier2: fs.read
// why: `nix::sys::stat::stat`

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = nix::sys::stat::stat(p.as_str());
    Ok(String::new())
}
