// truth: clean
// tier1: clean
// tier2: clean
// why: the analysed code's own `Client` type with a `get`

pub struct Client;

impl Client {
    pub fn get(&self, _k: &str) -> u8 {
        0
    }
}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let c = Client;
    c.get(&p);
    Ok(String::new())
}
