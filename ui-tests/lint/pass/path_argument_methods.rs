use policy_macros::tool;
use policy_runtime::{ReadPath, WritePath};

/// Copy a report with the path arguments' own methods, which resolve beneath the granted
/// folders; `std::fs` on a path the body built itself is not this lint's business.
#[tool(policy(fs.read = ["/data/**"], fs.write = ["/out/**"]))]
fn copy_report(path: ReadPath, dest: WritePath) -> Result<(), std::io::Error> {
    let text = path.read_to_string()?;
    dest.write(&text)?;
    let _ = std::fs::metadata("/data/index.txt");
    Ok(())
}

fn main() {}
