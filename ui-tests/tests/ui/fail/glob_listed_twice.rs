use policy_macros::tool;

#[tool(policy(fs.read = ["/data/**", "/data/**"]))]
fn probe() -> String {
    String::new()
}

fn main() {}
