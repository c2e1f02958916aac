#[path = "transport/tcp_impl.rs"]
mod tcp;

/// Fetches.
#[tool(policy(net = deny))]
fn fetch() -> std::io::Result<()> {
    tcp::connect_upstream()
}
