pub fn count(text: &str) -> usize {
    text.split_whitespace().count()
}
