// truth: clean
// tier1: clean
// tier2: clean
// why: a `Deref<Target = Path>` newtype whose path is only displayed

use std::ops::Deref;
use std::path::{Path, PathBuf};

pub struct Root(PathBuf);

impl Deref for Root {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let root = Root(PathBuf::from(&p));
    let _ = root.display().to_string();
    Ok(String::new())
}
