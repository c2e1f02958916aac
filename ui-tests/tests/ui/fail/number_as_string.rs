use policy_macros::tool;

#[tool(constraints(max_invocations = "3"))]
fn probe() -> String {
    String::new()
}

fn main() {}
