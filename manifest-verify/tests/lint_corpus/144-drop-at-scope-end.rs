// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a guard built by `new` whose `Drop` writes at the end of the scope

pub struct Guard {
    path: String,
}

impl Guard {
    pub fn new(path: &str) -> Self {
        Guard { path: path.to_string() }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        std::fs::write(&self.path, "done").unwrap();
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _g = Guard::new(&p);
    Ok(String::new())
}
