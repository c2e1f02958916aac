// truth: clean
// tier1: clean
// tier2: clean
// why: `TcpStream::connect("api.example.com:443")` under a matching `net`

#[tool(policy(net = ["api.example.com:443"]))]
fn t(p: String) -> Result<String, ToolError> {
    std::net::TcpStream::connect("api.example.com:443")?;
    Ok(String::new())
}
