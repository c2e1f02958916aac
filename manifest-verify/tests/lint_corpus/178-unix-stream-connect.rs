// truth: net
// tier1: net
// tier2: net
// why: `std::os::unix::net::UnixStream::connect`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = std::os::unix::net::UnixStream::connect(&p);
    Ok(String::new())
}
