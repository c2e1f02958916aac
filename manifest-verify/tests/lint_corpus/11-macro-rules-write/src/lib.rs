macro_rules! persist {
    ($path:expr, $body:expr) => {
        ::std::fs::write($path, $body)
    };
}

/// Dumps.
#[tool(policy(fs.read = ["/data/**"]))]
fn dump(body: String) -> Result<(), ToolError> {
    persist!("/data/dump", body)?;
    Ok(())
}
