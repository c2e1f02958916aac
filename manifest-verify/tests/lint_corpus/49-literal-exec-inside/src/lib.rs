use std::process::Command;

/// Shows the log with the one program it declares.
#[tool(policy(exec = ["git"], fs.read = ["/repo/**"], env = deny))]
fn log() -> bool {
    Command::new("git").args(["log", "-1"]).status().is_ok()
}
