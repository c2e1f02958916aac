// truth: clean
// tier1: clean
// tier2: clean
// why: `dyn Sink` reaches the impls of `Sink`, not an unrelated type's inherent `put`

pub trait Sink {
    fn put(&self, p: &str);
}

pub struct Memory;

impl Sink for Memory {
    fn put(&self, _p: &str) {}
}

pub struct Disk;

impl Disk {
    pub fn put(&self, p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let s: Box<dyn Sink> = Box::new(Memory);
    s.put(&p);
    Ok(String::new())
}
