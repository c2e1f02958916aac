// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: an impl on a type alias, called through the type's own name

pub struct Disk;

pub type Store = Disk;

impl Store {
    pub fn save(p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    Disk::save(&p);
    Ok(String::new())
}
