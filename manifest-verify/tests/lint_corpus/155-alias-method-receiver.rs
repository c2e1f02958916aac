// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a method on a value typed by an alias

pub struct Disk;

pub type Store = Disk;

impl Store {
    pub fn save(&self, p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let d: Disk = Disk;
    d.save(&p);
    Ok(String::new())
}
