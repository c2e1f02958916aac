// truth: fs.read
// tier1: clean
// tier2: fs.read
// why: a function returning `PathBuf`: `cache_dir().exists()` reads

use std::path::PathBuf;

fn cache_dir() -> PathBuf {
    PathBuf::from("/var/cache/app")
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let _ = cache_dir().exists();
    Ok(String::new())
}
