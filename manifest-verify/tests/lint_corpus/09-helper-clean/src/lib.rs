mod fmt;

/// Greets.
#[tool(policy(fs.read = none, fs.write = none, net = deny, exec = deny, env = deny))]
fn greet(name: String) -> String {
    fmt::greeting(&name)
}
