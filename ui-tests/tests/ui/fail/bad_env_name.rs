use policy_macros::tool;

#[tool(policy(env = ["AWS-KEY"]))]
fn probe() -> String {
    String::new()
}

fn main() {}
