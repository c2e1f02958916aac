// truth: env
// tier1: clean
// tier2: env
// why: `use std::env::vars;` in a helper module, under an env allow-list

mod dump {
    use std::env::vars;
    pub fn all() -> usize {
        vars().count()
    }
}

#[tool(policy(env = ["HOME"]))]
fn t(p: String) -> Result<String, ToolError> {
    dump::all();
    let _ = p;
    Ok(String::new())
}
