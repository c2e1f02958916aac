// truth: fs.write
// tier1: fs.write
// tier2: fs.write
// why: `rusqlite::Connection::open` creates the database file

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = rusqlite::Connection::open(&p);
    Ok(String::new())
}
