use policy_macros::tool;

/// Uses each capability with a policy that grants it.
#[tool(policy(fs.read = ["/data/**"], fs.write = ["/out/**"], net = ["api.example.com:443"], exec = ["ls"], env = ["HOME"]))]
fn everything(path: String) -> bool {
    let a = std::fs::read_to_string(&path).is_ok();
    let b = std::fs::write("/out/x", "y").is_ok();
    let c = std::net::TcpStream::connect("api.example.com:443").is_ok();
    let d = std::process::Command::new("ls").status().is_ok();
    let e = std::env::var("HOME").is_ok();
    a && b && c && d && e
}

/// Unspecified exec is allow and unspecified env inherits.
#[tool(policy(fs.read = none))]
fn defaults() -> bool {
    std::process::Command::new("true").status().is_ok() && std::env::var("PATH").is_ok()
}

fn main() {}
