pub fn probe() -> std::io::Result<()> {
    super::super::net::dial()
}
