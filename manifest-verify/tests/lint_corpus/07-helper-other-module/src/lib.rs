mod helpers;

/// Exports.
#[tool(policy(fs.read = ["/data/**"], net = deny))]
fn export(rows: Vec<String>) -> Result<(), ToolError> {
    let text = rows.join("\n");
    crate::helpers::save(&text)
}
