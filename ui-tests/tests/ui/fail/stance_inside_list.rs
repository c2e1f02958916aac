use policy_macros::tool;

#[tool(policy(net = [deny, "api.example.com:443"]))]
fn probe() -> String {
    String::new()
}

fn main() {}
