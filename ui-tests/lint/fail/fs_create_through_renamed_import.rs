use policy_macros::tool;

/// Creates a file through a renamed import.
#[tool(policy(fs.read = ["/data/**"], fs.write = none))]
fn touch(path: String) -> bool {
    use std::fs::File as Handle;
    Handle::create(path).is_ok()
}

fn main() {}
