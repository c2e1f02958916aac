// truth: clean
// tier1: clean
// tier2: clean
// why: a clean `save` called while another module's `save` writes

mod disk {
    pub fn save(p: &str) {
        std::fs::write(p, "x").unwrap();
    }
}

mod mem {
    pub fn save(_p: &str) {}
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    mem::save(&p);
    Ok(String::new())
}
