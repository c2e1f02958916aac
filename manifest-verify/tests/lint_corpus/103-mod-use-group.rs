// truth: net
// tier1: clean
// tier2: net
// why: a grouped module-level import of `TcpStream`

use std::{fs, net::TcpStream};

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = fs::read(&p)?;
    TcpStream::connect("a:1")?;
    Ok(String::new())
}
