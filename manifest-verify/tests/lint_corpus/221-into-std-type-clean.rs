// truth: clean
// tier1: clean
// tier2: clean
// why: `let s: String = x.into()` does not reach the crate's `From` impls

pub struct Cfg(String);

impl From<&str> for Cfg {
    fn from(p: &str) -> Cfg {
        Cfg(std::fs::read_to_string(p).unwrap())
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _s: String = p.as_str().into();
    Ok(String::new())
}
