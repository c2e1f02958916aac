//! Test helpers: keeping a committed manifest in step with the annotated tools.
//!
//! ```no_run
//! # fn registry() -> policy_runtime::Registry { policy_runtime::Registry::new() }
//! // tests/manifest.rs
//! policy_runtime::testing::assert_manifest_fresh("tool-manifest.json", &registry().manifest());
//! ```
//!
//! When the tools change, the test fails with a line diff; rerun it with
//! `TOOLPOLICY_UPDATE_MANIFEST=1 cargo test` to rewrite the file, and review the diff in
//! version control like any other change of permissions.

use std::path::Path;

use crate::manifest::Manifest;

/// The environment variable that makes [`assert_manifest_fresh`] rewrite the file.
pub const UPDATE_ENV: &str = "TOOLPOLICY_UPDATE_MANIFEST";

/// Panics with a readable diff when the manifest file at `path` differs from `manifest`
/// (compared as [`Manifest::to_json`] text), and says how to update it. With
/// `TOOLPOLICY_UPDATE_MANIFEST=1` it writes the file instead and passes.
///
/// A relative `path` is resolved against the current directory, which `cargo test` sets to
/// the package's root.
#[track_caller]
pub fn assert_manifest_fresh(path: impl AsRef<Path>, manifest: &Manifest) {
    if let Err(message) = check_manifest_fresh(path.as_ref(), manifest) {
        panic!("{message}");
    }
}

/// [`assert_manifest_fresh`] without the panic: `Err` carries the message.
pub fn check_manifest_fresh(path: &Path, manifest: &Manifest) -> Result<(), String> {
    let expected = manifest.to_json();
    let update = std::env::var(UPDATE_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    let committed = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read manifest {}: {e}", path.display())),
    };
    if committed.as_deref() == Some(expected.as_str()) {
        return Ok(());
    }
    if update {
        return manifest
            .write_to(path)
            .map_err(|e| format!("cannot write manifest {}: {e}", path.display()));
    }
    let how = format!(
        "rerun with `{UPDATE_ENV}=1 cargo test` to update it, then review and commit the change"
    );
    Err(match committed {
        None => format!(
            "manifest {} does not exist; {how}",
            path.display()
        ),
        Some(old) => format!(
            "manifest {} is stale: the annotated tools now declare a different policy.\n\n{}\n{how}",
            path.display(),
            line_diff(&old, &expected)
        ),
    })
}

/// A unified-style line diff (`-` committed, `+` current) with two lines of context.
fn line_diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // Longest common subsequence table; manifests are small.
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            ops.push(('+', b[j]));
            j += 1;
        } else {
            ops.push(('-', a[i]));
            i += 1;
        }
    }
    const CONTEXT: usize = 2;
    let near_change = |k: usize| {
        let lo = k.saturating_sub(CONTEXT);
        let hi = (k + CONTEXT).min(ops.len() - 1);
        ops[lo..=hi].iter().any(|(op, _)| *op != ' ')
    };
    let mut out = String::from("--- committed\n+++ current\n");
    let mut skipped = false;
    for (k, (op, line)) in ops.iter().enumerate() {
        if near_change(k) {
            if skipped {
                out.push_str("  ...\n");
                skipped = false;
            }
            out.push_str(&format!("{op} {line}\n"));
        } else {
            skipped = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{NetPolicy, ToolPolicy};

    fn manifest(net: NetPolicy) -> Manifest {
        let mut m = Manifest::new();
        m.insert(
            "fetch",
            ToolPolicy {
                net: Some(net),
                ..ToolPolicy::default()
            },
            None,
        );
        m
    }

    #[test]
    fn stale_manifest_shows_a_diff_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        std::fs::write(&path, manifest(NetPolicy::Deny).to_json()).unwrap();
        check_manifest_fresh(&path, &manifest(NetPolicy::Deny)).unwrap();
        let err = check_manifest_fresh(&path, &manifest(NetPolicy::Allow)).unwrap_err();
        assert!(err.contains("-       \"net\": \"deny\""), "{err}");
        assert!(err.contains("+       \"net\": \"allow\""), "{err}");
        assert!(
            err.contains("TOOLPOLICY_UPDATE_MANIFEST=1 cargo test"),
            "{err}"
        );
        let missing =
            check_manifest_fresh(&dir.path().join("none.json"), &manifest(NetPolicy::Deny))
                .unwrap_err();
        assert!(missing.contains("does not exist"), "{missing}");
    }

    #[test]
    fn diff_keeps_context_short() {
        let old: String = (0..20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l10\n", "L10\n");
        let d = line_diff(&old, &new);
        assert!(d.contains("- l10") && d.contains("+ L10") && d.contains("  l8"));
        assert!(!d.contains("l2\n") && !d.contains("l15"), "{d}");
    }
}
