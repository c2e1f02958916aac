// truth: net
// tier1: net
// tier2: net
// why: `nix::sys::socket::socket`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = nix::sys::socket::socket(AddressFamily::Inet, SockType::Stream, SockFlag::empty(), None);
    Ok(String::new())
}
