use policy_macros::tool;

#[tool(policy(exec = ["bin/rg"]))]
fn probe() -> String {
    String::new()
}

fn main() {}
