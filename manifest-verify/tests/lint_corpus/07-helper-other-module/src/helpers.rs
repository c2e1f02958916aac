use std::fs::File;
use std::io::Write;

pub fn save(text: &str) -> Result<(), ToolError> {
    let mut f = File::create("/data/export.csv")?;
    f.write_all(text.as_bytes())?;
    Ok(())
}
