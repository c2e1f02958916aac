// truth: clean
// tier1: clean
// tier2: clean
// why: a `crate::` helper that touches nothing

mod util {
    pub fn tidy(p: &str) -> String {
        p.trim().to_string()
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    crate::util::tidy(&p);
    Ok(String::new())
}
