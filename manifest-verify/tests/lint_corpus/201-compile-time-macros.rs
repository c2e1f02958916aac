// truth: clean
// tier1: clean
// tier2: clean
// why: `env!`, `include_str!` and `concat!` run at compile time

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _a = env!("CARGO_PKG_NAME");
    let _b = include_str!("lib.rs");
    let _c = concat!("a", "b");
    Ok(String::new())
}
