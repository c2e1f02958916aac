use policy_macros::tool;

/// Opens for writing with OpenOptions; one error for the chain.
#[tool(policy(fs.read = ["/var/log/**"]))]
fn append(path: String) -> bool {
    std::fs::OpenOptions::new().create(true).append(true).open(path).is_ok()
}

fn main() {}
