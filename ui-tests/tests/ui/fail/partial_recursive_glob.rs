use policy_macros::tool;

#[tool(policy(fs.read = ["/data/a**"]))]
fn probe() -> String {
    String::new()
}

fn main() {}
