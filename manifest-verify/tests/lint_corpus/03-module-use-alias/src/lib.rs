use std::fs;

/// Saves.
#[tool(policy(fs.read = ["/data/**"]))]
fn save(body: String) -> Result<(), ToolError> {
    fs::write("/data/x", body)?;
    Ok(())
}
