// truth: fs.read
// tier1: clean
// tier2: fs.read
// why: `Cfg::from(p)` runs the analysed code's `From` impl

pub struct Cfg(String);

impl From<&str> for Cfg {
    fn from(p: &str) -> Cfg {
        Cfg(std::fs::read_to_string(p).unwrap())
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _c = Cfg::from(p.as_str());
    Ok(String::new())
}
