use policy_macros::tool;

#[tool(policy(net = deny, max_invocations = 3))]
fn probe() -> String {
    String::new()
}

fn main() {}
