// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a call through a `Box<dyn Sink>` local: every impl of `Sink` counts

pub trait Sink {
    fn put(&self, p: &str);
}

pub struct Disk;

impl Sink for Disk {
    fn put(&self, p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let s: Box<dyn Sink> = Box::new(Disk);
    s.put(&p);
    Ok(String::new())
}
