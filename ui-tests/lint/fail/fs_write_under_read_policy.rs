use policy_macros::tool;

/// Writes although it may only read.
#[tool(policy(fs.read = ["/data/**"]))]
fn save(body: String) -> String {
    std::fs::write("/data/out.txt", &body).unwrap();
    body
}

fn main() {}
