use policy_macros::tool;

#[tool(policy(exec = deny | allow))]
fn probe() -> String {
    String::new()
}

fn main() {}
