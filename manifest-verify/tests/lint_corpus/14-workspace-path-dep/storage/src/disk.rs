pub fn put(key: &str, value: &str) -> Result<(), std::io::Error> {
    std::fs::write(format!("/var/lib/agent/{key}"), value)
}
