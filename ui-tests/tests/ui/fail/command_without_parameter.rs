use policy_macros::tool;

#[tool(policy(exec = ["sh"]), commands(max_level = 1))]
fn run(command: String) -> String {
    command
}

fn main() {}
