/// Writes a report.
#[tool(policy(fs.read = ["/data/**"]))]
fn report(body: String) -> Result<(), ToolError> {
    std::fs::write("/data/out.txt", body)?;
    Ok(())
}
