//! Every form of every policy part, checked against the JSON the manifest will carry.
#![allow(deprecated)] // `/data/*.csv` is widened by the sandbox; that warning is tested elsewhere

use policy_macros::tool;
use policy_runtime::tool::Tool;
use serde_json::json;

#[tool(policy(fs.read = ["/data/**", "/data/*.csv"], fs.write = "/out/**"))]
fn globs_list_and_single() {}

#[tool(policy(fs.read = none, fs.write = []))]
fn globs_none() {}

#[tool(policy(fs(read = "/a/**", write = ["/b/**"])))]
fn fs_group() {}

#[tool(policy(net = deny, exec = deny, env = deny))]
fn all_denied() {}

#[tool(policy(net = allow, exec = allow))]
fn all_allowed() {}

#[tool(policy(net = ["api.example.com:443", "*.example.org:443", "127.0.0.1:8080", "[::1]:80", "localhost:*"],
              exec = ["rg", "/usr/bin/git"], env = ["HOME", "AWS_*"]))]
fn lists() {}

#[tool(policy(net = "api.example.com:443", exec = "rg", env = "HOME"))]
fn single_strings() {}

#[tool(policy(net = none, exec = none, env = none))]
fn empty_lists() {}

#[tool(policy(risk = low))]
fn low() {}
#[tool(policy(risk = medium))]
fn medium() {}
#[tool(policy(risk = high))]
fn high() {}
#[tool(policy(risk = critical))]
fn critical() {}

#[tool()]
fn unspecified() {}

fn policy_of(tool: impl Tool) -> serde_json::Value {
    serde_json::to_value(&tool.spec().policy).unwrap()
}

fn main() {
    assert_eq!(
        policy_of(globs_list_and_single {}),
        json!({"fs": {"read": ["/data/**", "/data/*.csv"], "write": ["/out/**"]}})
    );
    assert_eq!(
        policy_of(globs_none {}),
        json!({"fs": {"read": [], "write": []}})
    );
    assert_eq!(
        policy_of(fs_group {}),
        json!({"fs": {"read": ["/a/**"], "write": ["/b/**"]}})
    );
    assert_eq!(
        policy_of(all_denied {}),
        json!({"net": "deny", "exec": "deny", "env": "deny"})
    );
    assert_eq!(
        policy_of(all_allowed {}),
        json!({"net": "allow", "exec": "allow"})
    );
    assert_eq!(
        policy_of(lists {}),
        json!({
            "net": {"hosts": ["api.example.com:443", "*.example.org:443", "127.0.0.1:8080", "[::1]:80", "localhost:*"]},
            "exec": {"allow": ["rg", "/usr/bin/git"]},
            "env": {"allow": ["HOME", "AWS_*"]},
        })
    );
    assert_eq!(
        policy_of(single_strings {}),
        json!({"net": {"hosts": ["api.example.com:443"]}, "exec": {"allow": ["rg"]}, "env": {"allow": ["HOME"]}})
    );
    assert_eq!(
        policy_of(empty_lists {}),
        json!({"net": {"hosts": []}, "exec": {"allow": []}, "env": {"allow": []}})
    );
    for (risk, policy) in [
        ("low", policy_of(low {})),
        ("medium", policy_of(medium {})),
        ("high", policy_of(high {})),
        ("critical", policy_of(critical {})),
    ] {
        assert_eq!(policy, json!({ "risk": risk }));
    }
    assert_eq!(policy_of(unspecified {}), json!({}));
}
