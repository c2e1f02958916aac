mod config {
    use std::env;
    pub fn secret() -> Option<String> {
        env::var("API_TOKEN").ok()
    }
}

/// Token length.
#[tool(policy(env = deny))]
fn token() -> usize {
    config::secret().map(|s| s.len()).unwrap_or(0)
}
