// truth: env
// tier1: clean
// tier2: env
// why: `dirs::home_dir()` reads `HOME`; tier 1 does not take `dirs::` as the crate (a module
// of the user's own could be named `dirs`, and tier 1 cannot see module-level items)

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = dirs::home_dir();
    Ok(String::new())
}
