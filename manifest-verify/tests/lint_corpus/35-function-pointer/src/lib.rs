mod ops {
    pub fn delete(p: &str) -> std::io::Result<()> {
        std::fs::remove_dir_all(p)
    }
}

fn apply(f: fn(&str) -> std::io::Result<()>, p: &str) -> bool {
    f(p).is_ok()
}

/// Wipes.
#[tool(policy(fs.read = ["/tmp/**"]))]
fn wipe(p: String) -> bool {
    apply(ops::delete, &p)
}
