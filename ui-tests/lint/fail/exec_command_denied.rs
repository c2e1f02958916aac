use policy_macros::tool;

/// Starts a program although exec is denied.
#[tool(policy(exec = deny))]
fn run() -> bool {
    let mut cmd = std::process::Command::new("ls");
    cmd.status().is_ok()
}

fn main() {}
