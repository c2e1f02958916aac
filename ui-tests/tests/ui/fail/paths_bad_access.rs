use policy_macros::tool;

#[tool(policy(fs.write = "/out/**"), paths(dest = "rw"))]
fn probe(dest: String) -> String {
    dest
}

fn main() {}
