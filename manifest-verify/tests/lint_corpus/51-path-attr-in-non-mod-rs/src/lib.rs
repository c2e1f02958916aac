mod transport;

/// Sends.
#[tool(policy(net = deny, exec = deny))]
fn send(msg: String) -> bool {
    transport::send(&msg) && transport::notify()
}
