use std::net::TcpStream;

pub fn connect_upstream() -> std::io::Result<()> {
    let _s = TcpStream::connect("example.com:80")?;
    Ok(())
}
