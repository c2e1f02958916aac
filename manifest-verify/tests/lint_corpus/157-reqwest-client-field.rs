// truth: net
// tier1: clean
// tier2: net
// why: `.get` on a struct field of type `reqwest::Client`

pub struct Api {
    http: reqwest::Client,
}

impl Api {
    fn fetch(&self, u: &str) {
        let _ = self.http.get(u).send();
    }
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    let api: Api = make();
    api.fetch(&p);
    Ok(String::new())
}

fn make() -> Api {
    unimplemented!()
}
