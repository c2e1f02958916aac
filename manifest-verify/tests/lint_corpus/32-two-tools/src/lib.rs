/// Hashes.
#[tool(policy(net = deny))]
fn digest(s: String) -> usize {
    s.len()
}

/// Uploads.
#[tool(policy(net = deny, fs.read = ["/data/**"]))]
fn upload(body: String) -> bool {
    ureq::post("https://example.com").send_string(&body).is_ok()
}
