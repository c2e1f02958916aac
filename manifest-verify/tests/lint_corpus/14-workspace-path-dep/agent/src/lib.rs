/// Stores.
#[tool(policy(fs.read = ["/var/lib/agent/**"]))]
fn store(key: String, value: String) -> Result<(), ToolError> {
    storage_kit::put(&key, &value)
}
