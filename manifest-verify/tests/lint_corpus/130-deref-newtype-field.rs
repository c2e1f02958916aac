// truth: fs.read
// tier1: clean
// tier2: fs.read
// why: a struct field of a `Deref<Target = Path>` newtype

use std::ops::Deref;
use std::path::{Path, PathBuf};

pub struct Root(PathBuf);

impl Deref for Root {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

pub struct Cfg {
    root: Root,
}

impl Cfg {
    fn ok(&self) -> bool {
        self.root.read_dir().is_ok()
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let cfg = Cfg { root: Root(PathBuf::from(&p)) };
    cfg.ok();
    Ok(String::new())
}
