use policy_macros::tool;

/// Lists the environment although env is `none`.
#[tool(policy(env = none))]
fn dump() -> usize {
    use std::env::vars as all_vars;
    all_vars().count()
}

fn main() {}
