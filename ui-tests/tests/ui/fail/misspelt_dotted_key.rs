// A misspelt dotted key is underlined whole, from `fs` to `raed`.
use policy_macros::tool;

#[tool(policy(fs.raed = ["/data/**"], net = deny))]
fn probe() -> String {
    String::new()
}

fn main() {}
