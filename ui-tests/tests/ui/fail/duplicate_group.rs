use policy_macros::tool;

#[tool(policy(net = deny), policy(risk = low))]
fn probe() -> String {
    String::new()
}

fn main() {}
