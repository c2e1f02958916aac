// truth: fs.read
// tier1: clean
// tier2: fs.read
// why: a helper joins its `&Path` parameter and checks `exists()`

use std::path::Path;

fn check(base: &Path) -> bool {
    base.join("x").exists()
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    check(Path::new(&p));
    Ok(String::new())
}
