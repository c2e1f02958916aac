use std::net::TcpStream;

/// Connects.
#[tool(policy(net = ["api.example.com:443"], exec = deny, env = deny))]
fn connect() -> bool {
    TcpStream::connect("api.example.com:443").is_ok()
}
