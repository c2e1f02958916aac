// truth: clean
// tier1: clean
// tier2: clean
// why: a module with `cfg_if!` whose tool only calls std and its own functions

cfg_if::cfg_if! {
    if #[cfg(unix)] {
        const SEP: char = '/';
    } else {
        const SEP: char = '\\';
    }
}

fn tidy(p: &str) -> String {
    p.trim().to_string()
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = std::fs::read(&p)?;
    let _ = tidy(&p);
    let _ = Some(SEP);
    Ok(String::new())
}
