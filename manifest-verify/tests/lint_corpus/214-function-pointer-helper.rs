// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a helper passed as a function pointer

fn helper(p: &str) {
    std::fs::write(p, "x").unwrap();
}

fn apply(f: fn(&str), p: &str) {
    f(p);
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    apply(helper, &p);
    Ok(String::new())
}
