/// Removes a tree: not something `run` does, although its parameter has the same name.
fn cleanup() {
    let _ = std::fs::remove_dir_all("/data/cache");
}

/// Reads one file, then calls the cleanup the caller passed in.
#[tool(policy(fs.read = ["/data/**"]))]
fn run(cleanup: &dyn Fn()) -> usize {
    cleanup();
    std::fs::read("/data/a").map(|v| v.len()).unwrap_or(0)
}

/// `remove_file` here is `std::fs::remove_file`: the glob import in the body wins over the
/// parameter of that name.
#[tool(policy(fs.read = ["/data/**"]))]
fn shadowed(remove_file: &dyn Fn(&str)) {
    use std::fs::*;
    let _ = remove_file("/data/a");
}
