//! Placeholder, replaced by the gate benchmark.
fn main() {}
