use policy_macros::tool;

/// Opens for reading with OpenOptions, without fs.read.
#[tool(policy(net = deny))]
fn peek(path: String) -> bool {
    std::fs::OpenOptions::new().read(true).open(path).is_ok()
}

fn main() {}
