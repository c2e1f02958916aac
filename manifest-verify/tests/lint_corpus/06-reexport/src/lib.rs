mod util {
    pub use std::fs::remove_file as rm;
}

/// Cleans up.
#[tool(policy(fs.read = ["/tmp/**"]))]
fn clean(path: ReadPath) -> Result<(), ToolError> {
    util::rm(path)?;
    Ok(())
}
