use std::process::Command;

/// Lists (exec unspecified means allow).
#[tool(policy(fs.read = ["/srv/**"]))]
fn list() -> bool {
    Command::new("ls").arg("/srv").status().is_ok()
}
