// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a struct generic over `S: Sink` calls its field

pub trait Sink {
    fn put(&self, p: &str);
}

pub struct Disk;

impl Sink for Disk {
    fn put(&self, p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

pub struct Holder<S: Sink> {
    s: S,
}

impl<S: Sink> Holder<S> {
    fn go(&self, p: &str) {
        self.s.put(p);
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    Holder { s: Disk }.go(&p);
    Ok(String::new())
}
