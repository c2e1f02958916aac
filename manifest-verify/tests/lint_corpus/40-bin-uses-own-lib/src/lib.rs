pub mod setup {
    pub fn apply(key: &str) {
        std::env::set_var("AGENT_MODE", key);
    }
}
