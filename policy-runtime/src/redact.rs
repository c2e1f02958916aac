//! Secret redaction for tool output and audit arguments.
//!
//! Known credential shapes (OpenAI/Anthropic-style `sk-`, GitHub `ghp_`/`gho_`/`ghs_`/
//! `github_pat_`, AWS `AKIA`/`ASIA`, Slack `xox?-`, GitLab `glpat-`, PEM private-key blocks,
//! `Bearer` tokens) are replaced by `[REDACTED:<kind>]`; so are long high-entropy tokens.
//! In JSON, values under keys that name secrets (`password`, `token`, `api_key`, ...) are
//! redacted whatever they look like.
//!
//! ```
//! use policy_runtime::redact::Redactor;
//!
//! let r = Redactor::new();
//! let out = r.redact("key=sk-proj-abcdefghijklmnopqrstuv123456 user=alice");
//! assert_eq!(out, "key=[REDACTED:api-key] user=alice");
//! assert_eq!(r.redact("nothing to see"), "nothing to see");
//! ```

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

/// Replaces secrets in text and JSON.
#[derive(Clone, Debug)]
pub struct Redactor {
    patterns: &'static [(Regex, &'static str)],
    token: &'static Regex,
    min_entropy_len: usize,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new()
    }
}

fn patterns() -> &'static [(Regex, &'static str)] {
    static P: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    P.get_or_init(|| {
        [
            (
                r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
                "private-key",
            ),
            (r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}", "api-key"),
            (r"\bgh[pousr]_[A-Za-z0-9]{20,}\b", "github-token"),
            (r"\bgithub_pat_[A-Za-z0-9_]{20,}\b", "github-token"),
            (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "aws-access-key"),
            (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", "slack-token"),
            (r"\bglpat-[A-Za-z0-9_\-]{20,}", "gitlab-token"),
            (r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{16,}=*", "bearer-token"),
        ]
        .into_iter()
        .map(|(re, kind)| (Regex::new(re).expect("valid secret pattern"), kind))
        .collect()
    })
}

fn token_regex() -> &'static Regex {
    static T: OnceLock<Regex> = OnceLock::new();
    T.get_or_init(|| Regex::new(r"[A-Za-z0-9+/_\-=]{24,}").expect("valid token pattern"))
}

impl Redactor {
    /// The default redactor.
    pub fn new() -> Redactor {
        Redactor {
            patterns: patterns(),
            token: token_regex(),
            min_entropy_len: 24,
        }
    }

    /// Redacts secrets in `text`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for (re, kind) in self.patterns {
            if re.is_match(&out) {
                out = Cow::Owned(
                    re.replace_all(&out, format!("[REDACTED:{kind}]"))
                        .into_owned(),
                );
            }
        }
        let min = self.min_entropy_len;
        if self
            .token
            .find_iter(&out)
            .any(|m| looks_random(m.as_str(), min))
        {
            let replaced = self
                .token
                .replace_all(&out, |c: &regex::Captures<'_>| {
                    let t = &c[0];
                    if looks_random(t, min) {
                        "[REDACTED:high-entropy]".to_string()
                    } else {
                        t.to_string()
                    }
                })
                .into_owned();
            out = Cow::Owned(replaced);
        }
        out
    }

    /// Redacts every string in a JSON value, and whole values under secret-named keys.
    ///
    /// ```
    /// use policy_runtime::redact::Redactor;
    /// let v = Redactor::new().redact_json(&serde_json::json!({"api_key": "short", "q": "hi"}));
    /// assert_eq!(v, serde_json::json!({"api_key": "[REDACTED:secret-field]", "q": "hi"}));
    /// ```
    pub fn redact_json(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.redact(s).into_owned()),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.redact_json(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let v = if is_secret_key(k) && !v.is_null() {
                            Value::String("[REDACTED:secret-field]".into())
                        } else {
                            self.redact_json(v)
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    [
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "private_key",
        "credential",
        "authorization",
    ]
    .iter()
    .any(|s| k.contains(s))
}

/// A token looks random when it mixes character classes and its Shannon entropy is high.
/// Paths and words (`/usr/lib/x86_64-linux-gnu`, `aaaaaaaa...`) stay below the bar.
fn looks_random(token: &str, min_len: usize) -> bool {
    if token.len() < min_len || token.contains('/') && token.matches('/').count() > 2 {
        return false;
    }
    let classes = [
        token.bytes().any(|b| b.is_ascii_lowercase()),
        token.bytes().any(|b| b.is_ascii_uppercase()),
        token.bytes().any(|b| b.is_ascii_digit()),
    ]
    .iter()
    .filter(|x| **x)
    .count();
    if classes < 2 {
        return false;
    }
    shannon_entropy(token) >= 4.0
}

fn shannon_entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_shapes() {
        let r = Redactor::new();
        for (input, kind) in [
            ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "github-token"),
            ("AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
            ("xoxb-1234567890-abcdefghij", "slack-token"),
            ("glpat-abcdefghij0123456789", "gitlab-token"),
            ("Authorization: Bearer abcdefghijklmnop.qrstuv", "bearer-token"),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
                "private-key",
            ),
        ] {
            let out = r.redact(input);
            assert!(out.contains(&format!("[REDACTED:{kind}]")), "{input} -> {out}");
        }
    }

    #[test]
    fn entropy_without_false_positives() {
        let r = Redactor::new();
        let out = r.redact("token: q8Zr2LmX9vT4pW7yK1nB5cH3jF6dS0aE");
        assert!(out.contains("[REDACTED:high-entropy]"), "{out}");
        for benign in [
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "the_quick_brown_fox_jumps_over_the_lazy_dog",
            "CONSTANT_NAME_THAT_IS_QUITE_LONG_INDEED",
        ] {
            assert_eq!(r.redact(benign), benign);
        }
    }
}
