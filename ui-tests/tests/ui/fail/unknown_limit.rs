use policy_macros::tool;

#[tool(limits(timeout = 5000))]
fn probe() -> String {
    String::new()
}

fn main() {}
