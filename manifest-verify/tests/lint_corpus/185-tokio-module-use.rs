// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: `use tokio::fs;` at module level

use tokio::fs;

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = fs::remove_file(&p);
    Ok(String::new())
}
