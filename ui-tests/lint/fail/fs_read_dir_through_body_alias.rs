use policy_macros::tool;

/// Lists a directory through a `use` inside the body.
#[tool(policy(fs.read = none))]
fn list(dir: String) -> usize {
    use std::fs;
    fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

fn main() {}
