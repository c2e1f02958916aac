use std::fs::*;

/// Counts arguments; `read` here is a local closure, not std::fs::read.
#[tool(policy(fs.read = none, fs.write = none, net = deny, exec = deny, env = deny))]
fn argc() -> usize {
    let read = |v: Vec<String>| v.len();
    read(std::env::args().collect())
}
