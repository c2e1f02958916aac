pub struct Journal {
    path: String,
}

impl Journal {
    pub fn write(&self, text: &str) -> std::io::Result<()> {
        std::fs::write(&self.path, text)
    }
}

/// Saves notes.
#[tool(policy(fs.read = ["/notes/**"]))]
fn save_notes(text: String) -> std::io::Result<()> {
    let j = Journal { path: "/notes/today".into() };
    j.write(&text)
}
