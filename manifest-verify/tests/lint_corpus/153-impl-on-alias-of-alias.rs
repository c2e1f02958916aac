// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: an impl on an alias of an alias

pub struct Disk;

pub type A = Disk;
pub type B = A;

impl B {
    pub fn save(p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    Disk::save(&p);
    Ok(String::new())
}
