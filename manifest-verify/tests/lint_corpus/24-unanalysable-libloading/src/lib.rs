use libloading::Library;

/// Loads a plugin.
#[tool(policy(fs.read = ["/plugins/**"]))]
fn plugin(path: ReadPath) -> bool {
    unsafe { Library::new(path.as_ref()).is_ok() }
}
