// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a temporary whose `Drop` deletes a file

pub struct Lock(String);

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = Lock(p.clone());
    Ok(String::new())
}
