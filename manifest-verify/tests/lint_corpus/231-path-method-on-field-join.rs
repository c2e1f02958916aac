// truth: fs.read
// tier1: clean
// tier2: fs.read
// why: `self.root.join(..).exists()` on a `PathBuf` field

pub struct Cfg {
    root: std::path::PathBuf,
}

impl Cfg {
    fn has(&self, n: &str) -> bool {
        self.root.join(n).exists()
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let c = Cfg { root: std::path::PathBuf::from("/data") };
    c.has(&p);
    Ok(String::new())
}
