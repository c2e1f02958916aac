// truth: clean
// tier1: clean
// tier2: clean
// why: a type whose `Drop` writes, never built by the tool

pub struct Lock(String);

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = p.len();
    Ok(String::new())
}
