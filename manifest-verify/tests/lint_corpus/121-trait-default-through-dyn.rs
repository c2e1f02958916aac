// truth: exec
// tier1: clean
// tier2: exec
// why: a default method of the trait, reached through `&dyn`

pub trait Runner {
    fn run(&self) {
        std::process::Command::new("ls").status().unwrap();
    }
}

pub struct R;

impl Runner for R {}

fn go(r: &dyn Runner) {
    r.run();
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    go(&R);
    Ok(String::new())
}
