use policy_macros::tool;

#[tool(policy(fs.write = "/out/../etc/**"))]
fn probe() -> String {
    String::new()
}

fn main() {}
