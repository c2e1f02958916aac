use policy_macros::tool;

/// Connects although `net = none` (the empty host list) grants no network.
#[tool(policy(net = none))]
fn dial(addr: String) -> bool {
    std::net::TcpStream::connect(addr).is_ok()
}

fn main() {}
