use policy_macros::tool;

/// May read HOME, but reads a secret.
#[tool(policy(env = ["HOME"]))]
fn token() -> String {
    std::env::var("GITHUB_TOKEN").unwrap_or_default()
}

fn main() {}
