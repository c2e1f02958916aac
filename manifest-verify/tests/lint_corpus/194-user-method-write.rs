// truth: clean
// tier1: clean
// tier2: clean
// why: a user type's own `.write()`

pub struct Buf(Vec<u8>);

impl Buf {
    pub fn write(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let mut b = Buf(Vec::new());
    b.write(p.as_bytes());
    Ok(String::new())
}
