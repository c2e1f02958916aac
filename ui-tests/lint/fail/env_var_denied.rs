use policy_macros::tool;

/// Reads a variable although env is denied.
#[tool(policy(env = deny))]
fn home() -> String {
    std::env::var("HOME").unwrap_or_default()
}

fn main() {}
