//! toolpolicy-lint reads `#[tool(...)]` with the attribute macro's own reader
//! (`policy_analysis::dsl`): the stances mean what they mean to `#[tool]`, messages quote the
//! attribute as written, and an attribute the macro refuses is reported with its line and
//! column instead of being read another way.

use manifest_verify::lint::{lint, LintError, Options};

fn krate(lib: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), lib).unwrap();
    dir
}

#[test]
fn net_none_grants_no_network_and_is_quoted_as_written() {
    let dir = krate(
        "#[tool(policy(net = none))]\nfn dial(addr: String) -> bool {\n    std::net::TcpStream::connect(addr).is_ok()\n}\n",
    );
    let report = lint(dir.path(), &Options::default()).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let [finding] = report.findings.as_slice() else {
        panic!("one finding: {:?}", report.findings)
    };
    assert_eq!(finding.code.to_string(), "lint.net");
    assert!(
        finding.message.contains("`net = none`"),
        "{}",
        finding.message
    );
    assert!(
        !finding.message.contains("net = deny"),
        "{}",
        finding.message
    );
}

#[test]
fn an_attribute_the_macro_refuses_is_reported_where_it_is_written() {
    let dir = krate("#[tool(policy(net = deny,\n    risk = \"low\"))]\nfn t() {}\n");
    let report = lint(dir.path(), &Options::default()).unwrap();
    let [LintError::Policy {
        file,
        line,
        column,
        message,
    }] = report.problems.as_slice()
    else {
        panic!("one policy problem: {:?}", report.problems)
    };
    assert_eq!((file.as_str(), *line, *column), ("src/lib.rs", 2, 12));
    assert!(
        message.contains("write `risk = low` without quotes"),
        "{message}"
    );
}
