// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a `macro_rules!` macro whose transcriber writes

macro_rules! save {
    ($p:expr) => {
        std::fs::write($p, "x").unwrap()
    };
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    save!(&p);
    Ok(String::new())
}
