// truth: clean
// tier1: clean
// tier2: clean
// why: `Connection::open_in_memory` touches no file

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = rusqlite::Connection::open_in_memory();
    Ok(String::new())
}
