use policy_macros::tool;

/// Deletes through a glob import in the body.
#[tool(policy(fs.read = ["/tmp/**"]))]
fn delete(path: String) -> bool {
    use std::fs::*;
    remove_file(path).is_ok()
}

fn main() {}
