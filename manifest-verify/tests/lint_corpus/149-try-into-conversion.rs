// truth: fs.read
// tier1: clean
// tier2: fs.read
// why: `let c: Cfg = p.try_into()?` runs `TryFrom<&str> for Cfg`

pub struct Cfg(String);

impl TryFrom<&str> for Cfg {
    type Error = std::io::Error;
    fn try_from(p: &str) -> Result<Cfg, Self::Error> {
        Ok(Cfg(std::fs::read_to_string(p)?))
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _c: Cfg = p.as_str().try_into()?;
    Ok(String::new())
}
