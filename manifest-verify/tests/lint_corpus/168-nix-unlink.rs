// truth: fs.write
// tier1: fs.write
// tier2: fs.write
// why: `nix::unistd::unlink`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = nix::unistd::unlink(p.as_str());
    Ok(String::new())
}
