// truth: fs.read
// tier1: clean
// tier2: fs.read
// why: `let c: Cfg = p.into()` runs `From<&str> for Cfg`

pub struct Cfg(String);

impl From<&str> for Cfg {
    fn from(p: &str) -> Cfg {
        Cfg(std::fs::read_to_string(p).unwrap())
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _c: Cfg = p.as_str().into();
    Ok(String::new())
}
