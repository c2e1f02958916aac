use policy_macros::tool;

#[tool(policy(net = denied))]
fn probe() -> String {
    String::new()
}

fn main() {}
