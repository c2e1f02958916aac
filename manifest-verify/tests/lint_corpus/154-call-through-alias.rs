// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a call through an alias of the implementing type

pub struct Disk;

impl Disk {
    pub fn save(p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

pub type A = Disk;
pub type B = A;

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    B::save(&p);
    Ok(String::new())
}
