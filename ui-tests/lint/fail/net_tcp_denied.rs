use policy_macros::tool;

/// Connects although net is denied.
#[tool(policy(net = deny))]
fn dial(addr: String) -> bool {
    std::net::TcpStream::connect(addr).is_ok()
}

fn main() {}
