use policy_macros::tool;

#[tool(policy(net = ["api.example.com"]))]
fn probe() -> String {
    String::new()
}

fn main() {}
