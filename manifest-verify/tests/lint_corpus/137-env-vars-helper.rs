// truth: env
// tier1: clean
// tier2: env
// why: a helper reads `env::vars()` for a tool with an allow-list

fn dump() -> usize {
    std::env::vars().count()
}

#[tool(policy(env = ["HOME"]))]
fn t(p: String) -> Result<String, ToolError> {
    dump();
    Ok(String::new())
}
