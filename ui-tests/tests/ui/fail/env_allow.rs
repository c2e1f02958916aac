use policy_macros::tool;

#[tool(policy(env = allow))]
fn probe() -> String {
    String::new()
}

fn main() {}
