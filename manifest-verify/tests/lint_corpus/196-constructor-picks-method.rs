// truth: clean
// tier1: clean
// tier2: clean
// why: `Mem::new().flush_to()` picks `Mem`'s method through `new`'s `Self`

pub struct Mem;

impl Mem {
    pub fn new() -> Self {
        Mem
    }
    pub fn flush_to(&self, _p: &str) {}
}

pub struct Disk;

impl Disk {
    pub fn flush_to(&self, p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let m = Mem::new();
    m.flush_to(&p);
    Ok(String::new())
}
