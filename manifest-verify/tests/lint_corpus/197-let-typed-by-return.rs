// truth: clean
// tier1: clean
// tier2: clean
// why: a `let` bound to a function's result keeps its type

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

fn mem() -> Mem {
    Mem
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let m = mem();
    m.store(&p);
    Ok(String::new())
}
