// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: `?` converts the error with `From<io::Error> for LogErr`, which writes a log

pub struct LogErr;

impl From<std::io::Error> for LogErr {
    fn from(_e: std::io::Error) -> LogErr {
        std::fs::write("/var/log/app", "failed").unwrap();
        LogErr
    }
}

fn load(p: &str) -> Result<String, LogErr> {
    let s = std::fs::read_to_string(p)?;
    Ok(s)
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = load(&p);
    Ok(String::new())
}
