use policy_macros::tool;

#[tool(constraints(only_after = [fetch, probe]))]
fn probe() -> String {
    String::new()
}

fn main() {}
