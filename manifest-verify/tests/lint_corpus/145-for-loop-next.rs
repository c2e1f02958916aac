// truth: fs.read
// tier1: clean
// tier2: fs.read
// why: `for` calls `next` of the analysed code's iterator

pub struct Lines {
    path: String,
}

impl Lines {
    pub fn new(path: &str) -> Lines {
        Lines { path: path.to_string() }
    }
}

impl Iterator for Lines {
    type Item = String;
    fn next(&mut self) -> Option<String> {
        std::fs::read_to_string(&self.path).ok()
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    for line in Lines::new(&p) {
        let _ = line;
    }
    Ok(String::new())
}
