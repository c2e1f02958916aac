use policy_macros::tool;

#[tool(polcy(net = deny))]
fn probe() -> String {
    String::new()
}

fn main() {}
