//! Every constraint and every limit.

use policy_macros::tool;
use policy_runtime::tool::Tool;
use serde_json::json;

#[tool(
    policy(net = deny),
    constraints(max_invocations = 3, only_after = [fetch, "index-files"], requires_approval = true, forbidden = false),
    limits(timeout_ms = 5_000, memory_bytes = 268435456, cpu_seconds = 2, max_processes = 8,
           max_output_bytes = 65536, max_file_bytes = 1048576, max_open_files = 64),
)]
fn everything() {}

#[tool(constraints(only_after = fetch))]
fn single_after() {}

#[tool(constraints(only_after = none, forbidden = true))]
fn forbidden() {}

fn main() {
    assert_eq!(
        serde_json::to_value(&everything {}.spec().policy).unwrap(),
        json!({
            "net": "deny",
            "constraints": {"max_invocations": 3, "only_after": ["fetch", "index-files"], "requires_approval": true, "forbidden": false},
            "limits": {"timeout_ms": 5000, "memory_bytes": 268435456, "cpu_seconds": 2, "max_processes": 8,
                       "max_output_bytes": 65536, "max_file_bytes": 1048576, "max_open_files": 64},
        })
    );
    assert_eq!(
        single_after {}.spec().policy.constraints.only_after,
        Some(vec!["fetch".to_string()])
    );
    assert_eq!(
        serde_json::to_value(&forbidden {}.spec().policy).unwrap(),
        json!({"constraints": {"only_after": [], "forbidden": true}})
    );
}
