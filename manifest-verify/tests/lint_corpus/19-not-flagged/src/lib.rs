use std::collections::HashMap;
use std::io::Write;

pub struct Buffer {
    data: Vec<u8>,
}

impl Buffer {
    pub fn write(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
    }
}

/// Echoes.
#[tool(policy(fs.read = none, fs.write = none, net = deny, exec = deny, env = deny))]
fn echo(words: Vec<String>) -> String {
    let mut buf = Buffer { data: Vec::new() };
    buf.write(b"x");
    let table: HashMap<String, String> = HashMap::new();
    let _ = table.get("k");
    std::io::stdout().write_all(b"hi").unwrap();
    let name = env!("CARGO_PKG_NAME");
    let _maybe = option_env!("BUILD_ID");
    let _readme = include_str!("lib.rs");
    let _args: Vec<String> = std::env::args().collect();
    if words.is_empty() {
        std::process::exit(0);
    }
    format!("{name}: {}", words.join(" "))
}
