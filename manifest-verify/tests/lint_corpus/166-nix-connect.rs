// truth: net
// tier1: net
// tier2: net
// why: `nix::sys::socket::connect`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = nix::sys::socket::connect(3, &addr());
    Ok(String::new())
}
