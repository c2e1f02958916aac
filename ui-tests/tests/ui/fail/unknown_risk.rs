use policy_macros::tool;

#[tool(policy(risk = extreme))]
fn probe() -> String {
    String::new()
}

fn main() {}
