use policy_macros::tool;

#[tool(policy(net = deny), name = "read file")]
fn probe() -> String {
    String::new()
}

fn main() {}
