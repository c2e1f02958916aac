use policy_macros::tool;

use std::collections::HashMap;
use std::io::Write;

struct Buffer(Vec<u8>);

impl Buffer {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

/// Uses everything of the not-flagged list under the strictest policy.
#[tool(policy(fs.read = none, fs.write = none, net = deny, exec = deny, env = deny))]
fn strict(words: Vec<String>) -> String {
    let mut buf = Buffer(Vec::new());
    buf.write(b"x");
    let table: HashMap<String, String> = HashMap::new();
    let _ = table.get("k");
    std::io::stdout().write_all(b"").unwrap();
    let name = env!("CARGO_PKG_NAME");
    let _build = option_env!("BUILD_ID");
    let _me = include_str!("not_flagged.rs");
    let args: Vec<String> = std::env::args().collect();
    if words.len() > 1_000_000 {
        std::process::exit(2);
    }
    format!("{name} {} {}", args.len(), buf.0.len())
}

fn main() {}
