pub trait Persist {
    fn key(&self) -> String;
    fn persist(&self) -> std::io::Result<()> {
        std::fs::write(format!("/archive/{}", self.key()), b"")
    }
}

pub struct Item(String);

impl Persist for Item {
    fn key(&self) -> String {
        self.0.clone()
    }
}

/// Archives.
#[tool(policy(fs.read = ["/archive/**"]))]
fn archive(name: String) -> bool {
    Item(name).persist().is_ok()
}
