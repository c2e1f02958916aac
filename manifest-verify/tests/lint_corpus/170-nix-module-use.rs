// truth: exec
// tier1: clean
// tier2: exec
// why: `use nix::unistd::execv;` at module level

use nix::unistd::execv;

#[tool(policy(exec = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = execv(&prog(), &args());
    Ok(String::new())
}
