// truth: unanalysable
// tier1: clean
// tier2: unanalysable
// why: a helper defined inside `cfg_if!`

cfg_if::cfg_if! {
    if #[cfg(unix)] {
        fn helper(p: &str) { std::fs::write(p, "x").unwrap(); }
    } else {
        fn helper(_p: &str) {}
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    helper(&p);
    Ok(String::new())
}
