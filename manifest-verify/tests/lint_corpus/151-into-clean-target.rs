// truth: clean
// tier1: clean
// tier2: clean
// why: `into()` a clean type does not reach another type's `From`

pub struct Cfg(String);

impl From<&str> for Cfg {
    fn from(p: &str) -> Cfg {
        Cfg(std::fs::read_to_string(p).unwrap())
    }
}

pub struct Name(String);

impl From<&str> for Name {
    fn from(p: &str) -> Name {
        Name(p.to_string())
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _n: Name = p.as_str().into();
    Ok(String::new())
}
