mod a {
    pub use super::b::*;
    pub fn length(s: &str) -> usize {
        s.len()
    }
}

mod b {
    pub use super::a::*;
}

/// Measures.
#[tool(policy(fs.read = none, net = deny, exec = deny, env = deny))]
fn measure(s: String) -> usize {
    b::length(&s)
}
