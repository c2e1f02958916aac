use policy_macros::tool;

#[tool(policy(risk = "high"))]
fn probe() -> String {
    String::new()
}

fn main() {}
