use policy_macros::tool;

#[tool(policy(net = deny, fs.read = "/a/**", net = allow))]
fn probe() -> String {
    String::new()
}

fn main() {}
