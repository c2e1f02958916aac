use policy_macros::tool;
use policy_runtime::{ReadPath, WritePath};

/// Copy a report: the read and the write are both granted, but `std::fs` would follow a symlink
/// out of the folders the gate admitted the paths under.
#[tool(policy(fs.read = ["/data/**"], fs.write = ["/out/**"]))]
fn copy_report(path: ReadPath, dest: WritePath) -> Result<(), std::io::Error> {
    let text = std::fs::read_to_string(&path)?;
    std::fs::write(dest.as_path(), text)
}

fn main() {}
