/// Reads a file.
#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn load(path: ReadPath) -> Result<String, ToolError> {
    Ok(std::fs::read_to_string(path)?)
}
