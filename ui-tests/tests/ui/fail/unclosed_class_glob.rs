use policy_macros::tool;

#[tool(policy(fs.read = ["/data/[abc"]))]
fn probe() -> String {
    String::new()
}

fn main() {}
