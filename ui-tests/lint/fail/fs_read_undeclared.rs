use policy_macros::tool;

/// Reads without declaring fs.
#[tool(policy(net = deny))]
fn load(name: String) -> String {
    ::std::fs::read_to_string(name).unwrap_or_default()
}

fn main() {}
