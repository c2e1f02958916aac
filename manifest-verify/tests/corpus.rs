//! The table-driven corpus: every directory of `tests/corpus/` holds `old.json`, `new.json` and
//! `expected.txt`, one finding per line as `CODE TOOL [WITNESS]` in report order (an empty file:
//! no finding). The witness, when given, must match exactly.

use std::path::Path;

use manifest_verify::{diff_manifests, load, Severity};

struct Expected {
    code: String,
    tool: String,
    witness: Option<String>,
}

fn expected(path: &Path) -> Vec<Expected> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut parts = l.splitn(3, ' ');
            Expected {
                code: parts.next().unwrap().to_string(),
                tool: parts.next().expect("a tool after the code").to_string(),
                witness: parts.next().map(str::to_string),
            }
        })
        .collect()
}

#[test]
fn corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 40, "the corpus has {} cases", dirs.len());
    let mut failures = Vec::new();
    let mut seen_codes = std::collections::BTreeSet::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let old = load(dir.join("old.json").to_str().unwrap()).unwrap();
        let new = load(dir.join("new.json").to_str().unwrap()).unwrap();
        let report = diff_manifests(&old.manifest, &new.manifest);
        let want = expected(&dir.join("expected.txt"));
        let got: Vec<String> = report
            .findings
            .iter()
            .map(|f| {
                format!(
                    "{} {} {}",
                    f.code,
                    f.tool,
                    f.witness.as_deref().unwrap_or("-")
                )
            })
            .collect();
        let matches = got.len() == want.len()
            && report.findings.iter().zip(&want).all(|(f, w)| {
                f.code.as_str() == w.code
                    && f.tool == w.tool
                    && w.witness
                        .as_ref()
                        .is_none_or(|x| f.witness.as_ref() == Some(x))
            });
        if !matches {
            failures.push(format!("{name}:\n  got:  {got:?}"));
        }
        // The verdict follows the codes: a widening exactly when an error-severity code is there.
        let widened = report
            .findings
            .iter()
            .any(|f| f.severity() == Severity::Error);
        assert_eq!(report.widened(), widened, "{name}");
        seen_codes.extend(report.findings.iter().map(|f| f.code));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for code in manifest_verify::Code::ALL {
        assert!(seen_codes.contains(code), "no corpus case produces {code}");
    }
}
