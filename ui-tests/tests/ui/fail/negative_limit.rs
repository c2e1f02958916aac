use policy_macros::tool;

#[tool(limits(timeout_ms = -5))]
fn probe() -> String {
    String::new()
}

fn main() {}
