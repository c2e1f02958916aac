use policy_macros::tool;

#[tool(policy(fs.read = ["/data//x/**"]))]
fn probe() -> String {
    String::new()
}

fn main() {}
