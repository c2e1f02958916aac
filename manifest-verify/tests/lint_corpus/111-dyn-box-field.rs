// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a call through a `Box<dyn Sink>` field

pub trait Sink {
    fn put(&self, p: &str);
}

pub struct Disk;

impl Sink for Disk {
    fn put(&self, p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

pub struct App {
    sink: Box<dyn Sink>,
}

impl App {
    fn run(&self, p: &str) {
        self.sink.put(p);
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let app = App { sink: Box::new(Disk) };
    app.run(&p);
    Ok(String::new())
}
