use policy_macros::tool;

#[tool(policy(net = deny))]
fn probe((a, b): (u32, u32)) -> String {
    format!("{a}{b}")
}

fn main() {}
