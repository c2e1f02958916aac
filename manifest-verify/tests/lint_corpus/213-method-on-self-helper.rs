// truth: net
// tier1: clean
// tier2: net
// why: a method of the tool's own type reached through `self`

pub struct Fetcher;

impl Fetcher {
    fn go(&self, a: &str) {
        self.raw(a);
    }
    fn raw(&self, a: &str) {
        let _ = std::net::TcpStream::connect(a);
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    Fetcher.go(&p);
    Ok(String::new())
}
