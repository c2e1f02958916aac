// truth: unanalysable
// tier1: unanalysable
// tier2: unanalysable
// why: `nix::fcntl::open`: its flags decide read or write

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = nix::fcntl::open(p.as_str(), OFlag::O_RDONLY, Mode::empty());
    Ok(String::new())
}
