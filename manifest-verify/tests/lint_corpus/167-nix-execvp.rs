// truth: exec
// tier1: exec
// tier2: exec
// why: `nix::unistd::execvp`

#[tool(policy(exec = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = nix::unistd::execvp(&prog(), &args());
    Ok(String::new())
}
