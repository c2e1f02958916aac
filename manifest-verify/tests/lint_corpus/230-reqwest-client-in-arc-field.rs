// truth: net
// tier1: clean
// tier2: net
// why: `.post` on an `Arc<reqwest::Client>` field

use std::sync::Arc;

pub struct Api {
    http: Arc<reqwest::Client>,
}

impl Api {
    fn send(&self, u: &str) {
        let _ = self.http.post(u).send();
    }
}

fn api() -> Api {
    unimplemented!()
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    api().send(&p);
    Ok(String::new())
}
