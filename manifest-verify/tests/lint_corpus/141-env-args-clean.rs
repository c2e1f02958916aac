// truth: clean
// tier1: clean
// tier2: clean
// why: `env::args()` is not the environment

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _a: Vec<String> = std::env::args().collect();
    Ok(String::new())
}
