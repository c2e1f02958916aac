use std::path::PathBuf;

fn cache_dir() -> PathBuf {
    PathBuf::from("/var/cache/agent")
}

/// Whether the cache exists.
#[tool(policy(net = deny))]
fn cached() -> bool {
    cache_dir().exists()
}
