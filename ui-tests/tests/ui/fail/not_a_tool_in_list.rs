use policy_macros::tool;

#[tool(policy(net = deny))]
fn probe() -> String {
    String::new()
}

pub struct Plain;

fn main() {
    let _tools = policy_runtime::tools![probe, Plain];
}
