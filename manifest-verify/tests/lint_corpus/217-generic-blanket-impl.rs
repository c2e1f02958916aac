// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a blanket `impl<T: AsRef<str>> Sink for T` reached through `impl Sink`

pub trait Sink {
    fn put(&self);
}

impl<T: AsRef<str>> Sink for T {
    fn put(&self) {
        std::fs::write(self.as_ref(), "x").unwrap();
    }
}

fn run(s: impl Sink) {
    s.put();
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    run(p);
    Ok(String::new())
}
