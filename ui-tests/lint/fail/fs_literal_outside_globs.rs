use policy_macros::tool;

/// May write under /out, but writes a literal path elsewhere.
#[tool(policy(fs.write = ["/out/**"]))]
fn install(body: String) -> bool {
    std::fs::write("/etc/profile.d/agent.sh", body).is_ok()
}

fn main() {}
