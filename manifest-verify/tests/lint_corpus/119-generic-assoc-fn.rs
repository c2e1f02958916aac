// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a trait's associated function called through a generic parameter

pub trait Store {
    fn create(p: &str) -> Self;
}

pub struct Disk;

impl Store for Disk {
    fn create(p: &str) -> Self {
        std::fs::File::create(p).unwrap();
        Disk
    }
}

fn make<S: Store>(p: &str) -> S {
    S::create(p)
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _d: Disk = make(&p);
    Ok(String::new())
}
