// truth: clean
// tier1: clean
// tier2: clean
// why: `table().lookup()`: the return type picks `MemTable::lookup`, not `DiskIndex::lookup`

pub struct MemTable;

impl MemTable {
    pub fn lookup(&self, _k: &str) -> u8 {
        0
    }
}

pub struct DiskIndex;

impl DiskIndex {
    pub fn lookup(&self, k: &str) -> u8 {
        std::fs::read(k).unwrap()[0]
    }
}

fn table() -> MemTable {
    MemTable
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    table().lookup(&p);
    Ok(String::new())
}
