// truth: clean
// tier1: clean
// tier2: clean
// why: `SocketAddr` and `Ipv4Addr` are data, not network use

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _a: std::net::SocketAddr = "1.2.3.4:5".parse().unwrap();
    let _b = std::net::Ipv4Addr::new(1, 2, 3, 4);
    Ok(String::new())
}
