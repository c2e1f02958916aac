use policy_macros::tool;

/// Opens read-only with OpenOptions, `.write(false)` included.
#[tool(policy(fs.read = ["/data/**"], fs.write = none))]
fn peek(path: String) -> bool {
    std::fs::OpenOptions::new().read(true).write(false).open(path).is_ok()
        && std::fs::metadata("/data").is_ok()
}

fn main() {}
