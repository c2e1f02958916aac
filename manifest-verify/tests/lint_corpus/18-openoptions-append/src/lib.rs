use std::fs::OpenOptions;
use std::io::Write;

/// Appends a line.
#[tool(policy(fs.read = ["/var/log/**"]))]
fn log_line(line: String) -> std::io::Result<()> {
    let mut opts = OpenOptions::new();
    opts.append(true);
    let mut f = opts.open("/var/log/agent.log")?;
    writeln!(f, "{line}")
}
