use policy_macros::tool;

#[tool(policy(fs.read = ["data/**"]))]
fn probe() -> String {
    String::new()
}

fn main() {}
