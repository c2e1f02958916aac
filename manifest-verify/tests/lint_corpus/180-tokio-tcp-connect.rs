// truth: net
// tier1: net
// tier2: net
// why: `tokio::net::TcpStream::connect`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = tokio::net::TcpStream::connect(&p);
    Ok(String::new())
}
