// truth: clean
// tier1: clean
// tier2: clean
// why: `for` over a `Vec` does not reach the crate's own `next`

pub struct Lines;

impl Iterator for Lines {
    type Item = u8;
    fn next(&mut self) -> Option<u8> {
        std::fs::read("/etc/passwd").ok().map(|v| v[0])
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    for b in vec![1u8, 2] {
        let _ = (b, &p);
    }
    Ok(String::new())
}
