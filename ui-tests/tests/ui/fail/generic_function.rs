use policy_macros::tool;

#[tool(policy(net = deny))]
fn probe<T: ToString>(value: T) -> String {
    value.to_string()
}

fn main() {}
