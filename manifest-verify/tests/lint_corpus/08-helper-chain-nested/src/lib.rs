mod a;
mod net;

/// Pings.
#[tool(policy(net = deny))]
fn ping() -> bool {
    a::check()
}
