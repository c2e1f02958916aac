use policy_macros::tool;

#[tool(net = deny)]
fn probe() -> String {
    String::new()
}

fn main() {}
