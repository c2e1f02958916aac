fn size(p: &str) -> u64 {
    ::std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Size.
#[tool(policy(net = deny))]
fn stat(path: String) -> u64 {
    size(&path)
}
