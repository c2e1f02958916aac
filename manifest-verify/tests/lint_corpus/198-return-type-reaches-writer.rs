// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: the return type picks the method that writes

pub struct Mem;

impl Mem {
    pub fn store(&self, _p: &str) {}
}

pub struct Disk;

impl Disk {
    pub fn store(&self, p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

fn disk() -> Disk {
    Disk
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    disk().store(&p);
    Ok(String::new())
}
