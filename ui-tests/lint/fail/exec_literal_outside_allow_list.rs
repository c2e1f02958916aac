use policy_macros::tool;

/// May run git, but runs curl.
#[tool(policy(exec = ["git"]))]
fn fetch() -> bool {
    std::process::Command::new("curl").status().is_ok()
}

fn main() {}
