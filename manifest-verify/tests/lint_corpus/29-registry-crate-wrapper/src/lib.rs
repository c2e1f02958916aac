use tempfile::NamedTempFile;

/// Creates a scratch file.
#[tool(policy(fs.read = ["/data/**"]))]
fn scratch() -> bool {
    NamedTempFile::new().is_ok()
}
