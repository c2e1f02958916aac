use std::path::Path;

fn present(p: &Path) -> bool {
    p.exists()
}

/// Probes.
#[tool(policy(net = deny))]
fn probe(path: String) -> bool {
    present(Path::new(&path))
}
