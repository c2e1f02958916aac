// truth: net
// tier1: clean
// tier2: net
// why: `use std::os::unix::net::UnixListener;` then `bind`

use std::os::unix::net::UnixListener;

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = UnixListener::bind(&p);
    Ok(String::new())
}
