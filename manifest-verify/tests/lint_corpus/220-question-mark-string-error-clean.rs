// truth: clean
// tier1: clean
// tier2: clean
// why: `?` into a `String` error does not reach the crate's `From` impls

pub struct LogErr;

impl From<std::num::ParseIntError> for LogErr {
    fn from(_e: std::num::ParseIntError) -> LogErr {
        std::fs::write("/var/log/app", "failed").unwrap();
        LogErr
    }
}

fn parse(p: &str) -> Result<u8, String> {
    let n = p.parse::<u8>().map_err(|e| e.to_string())?;
    Ok(n)
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = parse(&p);
    Ok(String::new())
}
