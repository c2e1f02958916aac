use policy_macros::tool;

#[tool(policy = "net = deny")]
fn probe() -> String {
    String::new()
}

fn main() {}
