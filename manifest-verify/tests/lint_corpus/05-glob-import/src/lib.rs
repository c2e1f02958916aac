use std::env::*;

/// Home.
#[tool(policy(env = deny))]
fn home() -> Option<String> {
    var("HOME").ok()
}
