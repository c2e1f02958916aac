// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: calls through a `Vec<Box<dyn Sink>>`

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
    let sinks: Vec<Box<dyn Sink>> = vec![Box::new(Disk)];
    for s in &sinks {
        s.put(&p);
    }
    Ok(String::new())
}
