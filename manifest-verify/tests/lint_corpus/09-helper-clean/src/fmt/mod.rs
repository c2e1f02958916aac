pub fn greeting(name: &str) -> String {
    let mut out = String::new();
    use std::fmt::Write;
    let _ = write!(out, "hello {name}");
    out
}
