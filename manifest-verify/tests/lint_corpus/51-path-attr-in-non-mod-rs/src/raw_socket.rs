pub fn open(msg: &str) -> bool {
    std::net::UdpSocket::bind("0.0.0.0:0").is_ok() && !msg.is_empty()
}
