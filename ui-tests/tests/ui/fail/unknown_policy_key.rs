use policy_macros::tool;

#[tool(policy(nett = deny))]
fn probe() -> String {
    String::new()
}

fn main() {}
