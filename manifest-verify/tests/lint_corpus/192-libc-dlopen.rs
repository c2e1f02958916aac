// truth: unanalysable
// tier1: unanalysable
// tier2: unanalysable
// why: `libc::dlopen`

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    unsafe { libc::dlopen(std::ptr::null(), 0) };
    Ok(String::new())
}
