// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a helper generic over `S` with `where S: Sink`

pub trait Sink {
    fn put(&self, p: &str);
}

pub struct Disk;

impl Sink for Disk {
    fn put(&self, p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

fn run<S>(s: &S, p: &str)
where
    S: Sink,
{
    s.put(p);
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    run(&Disk, &p);
    Ok(String::new())
}
