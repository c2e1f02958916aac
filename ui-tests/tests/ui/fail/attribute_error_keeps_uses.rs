// An attribute error is the only diagnostic: the function is still compiled next to it, so the
// imports its body uses are not reported as unused.
use std::collections::BTreeMap;

use policy_macros::tool;

#[tool(policy(nett = deny))]
fn probe() -> String {
    let counts: BTreeMap<String, u32> = BTreeMap::new();
    format!("{counts:?}")
}

fn main() {}
