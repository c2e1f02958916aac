// truth: fs.read
// tier1: clean
// tier2: fs.read
// why: a newtype over a newtype over `PathBuf`

use std::ops::Deref;
use std::path::{Path, PathBuf};

pub struct Root(PathBuf);

impl Deref for Root {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

pub struct Outer(Root);

impl Deref for Outer {
    type Target = Root;
    fn deref(&self) -> &Root {
        &self.0
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let o = Outer(Root(PathBuf::from(&p)));
    let _ = o.is_dir();
    Ok(String::new())
}
