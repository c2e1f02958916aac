// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: `use rusqlite::Connection;` then `Connection::open`

use rusqlite::Connection;

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = Connection::open(&p);
    Ok(String::new())
}
