//! "Did you mean" for misspelt keys.

/// The candidate closest to `word`, if it is close enough to be a plausible typo.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = match word.len() {
        0..=3 => 1,
        4..=7 => 2,
        _ => 3,
    };
    candidates
        .iter()
        .map(|c| (distance(word, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// A `help:` suffix naming the closest candidate, or listing them all when none is close.
pub fn help(word: &str, candidates: &[&str]) -> String {
    match closest(word, candidates) {
        Some(c) => format!("did you mean `{c}`?"),
        None => format!(
            "expected one of {}",
            candidates
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Levenshtein distance over characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_typos_and_rejects_strangers() {
        let keys = ["fs.read", "fs.write", "net", "exec", "env", "risk"];
        assert_eq!(closest("fs.raed", &keys), Some("fs.read"));
        assert_eq!(closest("nett", &keys), Some("net"));
        assert_eq!(closest("execute", &keys), None);
        assert_eq!(closest("banana", &keys), None);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
