// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a newtype that derefs to the crate's own type, whose method writes

use std::ops::Deref;

pub struct Disk;

impl Disk {
    pub fn save(&self, p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

pub struct Wrapper(Disk);

impl Deref for Wrapper {
    type Target = Disk;
    fn deref(&self) -> &Disk {
        &self.0
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let w = Wrapper(Disk);
    w.save(&p);
    Ok(String::new())
}
