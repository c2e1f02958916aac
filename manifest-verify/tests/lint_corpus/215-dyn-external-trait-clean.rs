// truth: clean
// tier1: clean
// tier2: clean
// why: `&mut dyn io::Write` does not reach an unrelated inherent `write_all`

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

fn emit(w: &mut dyn std::io::Write, b: &[u8]) {
    w.write_all(b).unwrap();
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    emit(&mut std::io::stdout(), p.as_bytes());
    Ok(String::new())
}
