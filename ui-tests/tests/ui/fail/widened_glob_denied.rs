// `#![deny(deprecated)]` turns the widening warning into an error, as a CI that denies
// warnings would.
#![deny(deprecated)]

use policy_macros::tool;

#[tool(policy(fs.read = "/src/*/lib.rs"))]
fn probe() -> String {
    String::new()
}

fn main() {}
