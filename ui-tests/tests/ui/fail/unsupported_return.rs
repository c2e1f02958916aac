use policy_macros::tool;

#[tool(policy(net = deny))]
fn probe() -> Vec<u8> {
    Vec::new()
}

fn main() {}
