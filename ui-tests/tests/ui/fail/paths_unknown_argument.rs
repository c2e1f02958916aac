use policy_macros::tool;

#[tool(policy(fs.write = "/out/**"), paths(dset = write))]
fn probe(dest: String) -> String {
    dest
}

fn main() {}
