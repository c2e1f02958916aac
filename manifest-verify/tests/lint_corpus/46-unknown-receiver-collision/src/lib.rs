use std::collections::BTreeMap;

pub struct DiskIndex;

impl DiskIndex {
    pub fn lookup(&self, key: &str) -> Option<String> {
        std::fs::read_to_string(format!("/index/{key}")).ok()
    }
}

pub trait Lookup {
    fn lookup(&self, key: &str) -> Option<String>;
}

impl Lookup for BTreeMap<String, String> {
    fn lookup(&self, key: &str) -> Option<String> {
        self.get(key).cloned()
    }
}

fn table() -> BTreeMap<String, String> {
    BTreeMap::new()
}

/// Looks up in memory.
#[tool(policy(fs.read = none, net = deny, exec = deny, env = deny))]
fn recall(key: String) -> Option<String> {
    table().lookup(&key)
}
