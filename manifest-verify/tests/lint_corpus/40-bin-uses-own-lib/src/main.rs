/// Configures.
#[tool(policy(env = deny))]
fn configure(mode: String) {
    agent_bin::setup::apply(&mode);
}

fn main() {}
