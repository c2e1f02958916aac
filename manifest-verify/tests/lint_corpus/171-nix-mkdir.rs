// truth: fs.write
// tier1: fs.write
// tier2: fs.write
// why: `nix::unistd::mkdir`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = nix::unistd::mkdir(p.as_str(), Mode::S_IRWXU);
    Ok(String::new())
}
