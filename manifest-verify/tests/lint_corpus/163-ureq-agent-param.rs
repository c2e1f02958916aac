// truth: net
// tier1: clean
// tier2: net
// why: `.get` on a `&ureq::Agent` parameter

fn fetch(a: &ureq::Agent, u: &str) {
    let _ = a.get(u).call();
}

fn agent() -> &'static ureq::Agent {
    unimplemented!()
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    fetch(agent(), &p);
    Ok(String::new())
}
