// truth: exec
// tier1: clean
// tier2: exec
// why: a nested module's helper reached through `super::`

mod outer {
    pub mod inner {
        pub fn go() {
            super::run();
        }
    }
    fn run() {
        std::process::Command::new("ls").status().unwrap();
    }
}

#[tool(policy(exec = deny))]
fn t(p: String) -> Result<String, ToolError> {
    outer::inner::go();
    Ok(String::new())
}
