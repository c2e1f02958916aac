use std::fs::OpenOptions;

/// Opens for reading.
#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn peek(path: ReadPath) -> std::io::Result<()> {
    let _f = OpenOptions::new().read(true).write(false).open(path)?;
    Ok(())
}
