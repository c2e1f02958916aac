use policy_macros::tool;

#[tool(constraints(forbidden = true, max_invocations = 2, requires_approval = true))]
fn probe() -> String {
    String::new()
}

fn main() {}
