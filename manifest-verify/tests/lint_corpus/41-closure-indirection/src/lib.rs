/// Purges.
#[tool(policy(fs.read = ["/tmp/**"]))]
fn purge(paths: Vec<String>) -> usize {
    let rm = |p: &String| std::fs::remove_file(p).is_ok();
    paths.iter().filter(|p| rm(p)).count()
}
