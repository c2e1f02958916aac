use policy_macros::tool;

#[tool(constraints(forbidden = "true"))]
fn probe() -> String {
    String::new()
}

fn main() {}
