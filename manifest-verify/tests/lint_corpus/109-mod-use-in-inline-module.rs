// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: an inline module imports `std::fs`; its function writes

mod store {
    use std::fs;
    pub fn put(p: &str) {
        fs::write(p, "x").unwrap();
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    store::put(&p);
    Ok(String::new())
}
