/// Counts words.
#[tool(policy(fs.read = none, net = deny, exec = deny, env = deny))]
fn words(text: String) -> usize {
    textkit::count(&text)
}
