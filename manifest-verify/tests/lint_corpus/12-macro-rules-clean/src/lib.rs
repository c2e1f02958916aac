macro_rules! shout {
    ($s:expr) => {
        format!("{}!", $s.to_uppercase())
    };
}

/// Shouts.
#[tool(policy(fs.read = none, net = deny, exec = deny, env = deny))]
fn yell(s: String) -> String {
    shout!(s)
}
