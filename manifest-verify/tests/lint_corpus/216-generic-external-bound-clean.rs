// truth: clean
// tier1: clean
// tier2: clean
// why: `T: Summary` (a trait from elsewhere, implemented nowhere here) does not reach an inherent `summarize`

pub struct Disk;

impl Disk {
    pub fn write_all(&mut self, b: &[u8]) {
        std::fs::write("/out/x", b).unwrap();
    }
    pub fn summarize(&self) -> String {
        std::fs::write("/out/s", "x").unwrap();
        String::new()
    }
}

fn show<T: summary::Summary>(t: &T) -> String {
    t.summarize()
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    show(&p);
    Ok(String::new())
}
