//! The MCP server as a client sees it: the `mcp-server` binary started as a subprocess, spoken
//! to in JSON-RPC over its stdin and stdout. It lists the seven tools with annotations derived
//! from their policies and the policies in `_meta`, runs allowed calls, refuses the denied ones
//! (path escapes, the session's constraints), runs `grep` in the sandbox, and writes the audit
//! log.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use policy_runtime::Manifest;
use serde_json::{json, Value};
use toolpolicy_examples::mcp::{hints, PolicyServer};

mod common;
use common::{strict_profile_available, world_lock};

#[path = "../../sandbox/tests/support/kernel.rs"]
mod kernel;
#[path = "../../policy-runtime/tests/support/otlp.rs"]
mod otlp;

/// A JSON-RPC client of the server's stdio.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Client {
    fn start(audit: &Path, otlp: &str) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-server"))
            .arg("--init-world")
            .arg("--audit")
            .arg(audit)
            .arg("--otlp")
            .arg(otlp)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start mcp-server");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Client {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 1,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("the session is open");
        writeln!(stdin, "{message}").expect("write to mcp-server");
        stdin.flush().unwrap();
    }

    /// Sends a request and waits for its response (skipping any notification).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("no response to `{method}` (id {id}): {e}"));
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC: {e}: {line}"));
            if message["id"] == id {
                assert!(
                    message.get("error").is_none(),
                    "`{method}` failed: {message}"
                );
                return message["result"].clone();
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Closes stdin (the end of the session) and returns the server's exit code.
    fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        self.child.wait().expect("wait for mcp-server").code()
    }
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

#[test]
fn mcp_server_over_stdio() {
    let _lock = world_lock();
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let collector = otlp::collector();
    let mut client = Client::start(&audit, &collector.endpoint);

    let init = client.request(
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "toolpolicy-test", "version": "0"}
        }),
    );
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    // tools/list: the seven tools, annotations derived from the policy, policy in _meta.
    let listed = client.request("tools/list", json!({}));
    let tools = listed["tools"].as_array().expect("a tools array");
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "fetch_url",
            "grep",
            "list_dir",
            "read_file",
            "run_shell",
            "run_tests",
            "write_report"
        ]
    );
    let committed =
        Manifest::from_path(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools.manifest.json"))
            .expect("the committed manifest of the example tools");
    // (readOnly, destructive, idempotent, openWorld) as the policies warrant them; the
    // destructive and idempotent hints only where the MCP specification gives them a meaning
    // (readOnly false).
    let expected = [
        ("list_dir", (true, None, None, false)),
        ("read_file", (true, None, None, false)),
        ("grep", (true, None, None, false)),
        ("fetch_url", (true, None, None, true)),
        ("write_report", (false, Some(true), Some(false), false)),
        ("run_tests", (false, Some(true), Some(false), false)),
        ("run_shell", (false, Some(true), Some(false), false)),
    ];
    let specs = PolicyServer::tool_specs();
    for (name, (read_only, destructive, idempotent, open_world)) in expected {
        let tool = tools.iter().find(|t| t["name"] == name).unwrap();
        let a = &tool["annotations"];
        assert_eq!(
            (
                &a["readOnlyHint"],
                &a["destructiveHint"],
                &a["idempotentHint"],
                &a["openWorldHint"]
            ),
            (
                &json!(read_only),
                &json!(destructive),
                &json!(idempotent),
                &json!(open_world)
            ),
            "annotations of `{name}`: {a}"
        );
        // The doc comment reaches the client, whole, as the description; and a title.
        let spec = specs.iter().find(|s| s.name == name).unwrap();
        assert!(!spec.description.is_empty(), "{name}");
        assert_eq!(tool["description"], spec.description, "{tool}");
        assert!(
            tool["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{tool}"
        );
        let meta = &tool["_meta"];
        let policy = &committed.tools[name].policy;
        assert_eq!(
            meta["toolpolicy/policy"],
            serde_json::to_value(policy).unwrap(),
            "`{name}` publishes the policy of the committed manifest"
        );
        assert_eq!(meta["toolpolicy/policyHash"], policy.hash(), "{name}");
        assert_eq!(meta["toolpolicy/manifestHash"], committed.hash(), "{name}");
        assert_eq!(
            *a,
            serde_json::to_value(hints(policy)).unwrap(),
            "`{name}`: the annotations are the ones derived from the policy"
        );
        assert!(tool["inputSchema"]["properties"].is_object(), "{tool}");
    }

    // Constraints hold per session: write_report only after read_file.
    let early = client.call(
        "write_report",
        json!({"path": "/tmp/toolpolicy-demo/out/early.md", "body": "x"}),
    );
    assert!(is_error(&early), "{early}");
    assert_eq!(
        early["_meta"]["toolpolicy/denial"]["code"], "constraint.only_after",
        "{early}"
    );
    assert!(!Path::new("/tmp/toolpolicy-demo/out/early.md").exists());

    // Allowed calls.
    let listing = client.call("list_dir", json!({"path": "/tmp/toolpolicy-demo/data"}));
    assert!(!is_error(&listing), "{listing}");
    let entries: Vec<String> = text(&listing).lines().map(String::from).collect();
    assert!(entries.contains(&"notes.md".to_string()), "{listing}");
    assert!(entries.contains(&"sales.csv".to_string()), "{listing}");
    let notes = client.call(
        "read_file",
        json!({"path": "/tmp/toolpolicy-demo/data/notes.md"}),
    );
    assert!(!is_error(&notes), "{notes}");
    assert_eq!(
        text(&notes),
        std::fs::read_to_string("/tmp/toolpolicy-demo/data/notes.md").unwrap()
    );

    // Denied: `..` out of the data folder, refused by the method's own gate.
    let secret = std::fs::read_to_string("/tmp/toolpolicy-demo/home/.ssh/id_rsa").unwrap();
    let key_line = secret.lines().nth(1).unwrap().to_string();
    let denied = client.call(
        "read_file",
        json!({"path": "/tmp/toolpolicy-demo/data/../home/.ssh/id_rsa"}),
    );
    assert!(is_error(&denied), "{denied}");
    assert!(
        text(&denied).starts_with("Denied: `read_file` was not run."),
        "{denied}"
    );
    let denial = &denied["_meta"]["toolpolicy/denial"];
    assert_eq!(denial["code"], "fs.path_not_allowed", "{denied}");
    assert_eq!(denial["layer"], "mcp", "{denied}");
    assert_eq!(denial["path"], "/tmp/toolpolicy-demo/home/.ssh/id_rsa");
    assert!(!denied.to_string().contains(&key_line));
    // The planted symlink passes the gate by name, but the tool opens beneath its root.
    let escaped = client.call(
        "read_file",
        json!({"path": "/tmp/toolpolicy-demo/data/keys/id_rsa"}),
    );
    assert!(is_error(&escaped), "{escaped}");
    assert!(!escaped.to_string().contains(&key_line), "{escaped}");

    // max_invocations = 2 per session.
    for n in 1..=2 {
        let ok = client.call(
            "write_report",
            json!({"path": format!("/tmp/toolpolicy-demo/out/r{n}.md"), "body": "# report"}),
        );
        assert!(!is_error(&ok), "{ok}");
    }
    assert_eq!(
        std::fs::read_to_string("/tmp/toolpolicy-demo/out/r2.md").unwrap(),
        "# report"
    );
    let third = client.call(
        "write_report",
        json!({"path": "/tmp/toolpolicy-demo/out/r3.md", "body": "x"}),
    );
    assert_eq!(
        third["_meta"]["toolpolicy/denial"]["code"], "constraint.max_invocations",
        "{third}"
    );
    let outside = client.call(
        "write_report",
        json!({"path": "/tmp/toolpolicy-demo/data/notes.md", "body": "x"}),
    );
    assert_eq!(
        outside["_meta"]["toolpolicy/denial"]["code"], "fs.path_not_allowed",
        "{outside}"
    );

    // A subprocess tool runs in the sandbox, which reports what it enforced.
    let sandboxed = strict_profile_available();
    if sandboxed {
        let found = client.call(
            "grep",
            json!({"pattern": "widgets", "path": "/tmp/toolpolicy-demo/data"}),
        );
        assert!(!is_error(&found), "{found}");
        assert!(text(&found).contains("notes.md"), "{found}");
        assert!(
            found["_meta"]["toolpolicy/audit"].is_object(),
            "the sandbox's report reaches the client: {found}"
        );
        // The planted e2e suite tries to read the key, exfiltrate, spawn bash and write
        // outside the project: it fails, and the client sees what the sandbox enforced.
        let e2e = client.call("run_tests", json!({"suite": "e2e"}));
        assert!(is_error(&e2e), "{e2e}");
        assert!(!e2e.to_string().contains(&key_line), "{e2e}");
        assert_eq!(
            e2e["_meta"]["toolpolicy/audit"]["sandbox"]["profile"], "strict",
            "{e2e}"
        );
        assert!(!Path::new("/tmp/toolpolicy-demo/out/pwned.txt").exists());
    }
    let escaping_grep = client.call(
        "grep",
        json!({"pattern": "PRIVATE", "path": "/tmp/toolpolicy-demo/home/.ssh"}),
    );
    assert_eq!(
        escaping_grep["_meta"]["toolpolicy/denial"]["code"], "fs.path_not_allowed",
        "{escaping_grep}"
    );

    assert_eq!(client.finish(), Some(0), "the server ends with the session");

    // The audit log holds every refusal, whichever layer refused it, and the executions.
    let log = std::fs::read_to_string(&audit).expect("the audit log");
    let events: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON event per line"))
        .collect();
    let count = |tool: &str, event: &str, code: Option<&str>| {
        events
            .iter()
            .filter(|e| {
                e["tool"] == tool && e["event"] == event && code.is_none_or(|c| e["code"] == c)
            })
            .count()
    };
    assert_eq!(
        count("read_file", "denied", Some("fs.path_not_allowed")),
        1,
        "{log}"
    );
    assert_eq!(
        count("write_report", "denied", Some("constraint.only_after")),
        1,
        "{log}"
    );
    assert_eq!(
        count("write_report", "denied", Some("constraint.max_invocations")),
        1,
        "{log}"
    );
    assert_eq!(count("write_report", "executed", None), 2, "{log}");
    assert_eq!(
        count("grep", "executed", None),
        usize::from(sandboxed),
        "{log}"
    );
    assert!(events
        .iter()
        .all(|e| e["manifest_hash"] == committed.hash()));
    assert!(!log.contains(&key_line), "no secret in the audit log");

    // The same calls as OpenTelemetry spans: one `execute_tool` span per call the log ended,
    // whichever layer refused it, with the decision and the sandbox's facts.
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| ["denied", "executed", "failed"].contains(&e["event"].as_str().unwrap()))
        .collect();
    let spans = collector.spans(ends.len(), "toolpolicy-mcp-server");
    assert_eq!(spans.len(), ends.len());
    let attr = |span: &otlp::Span, key: &str| otlp::string_attr(span, key).map(str::to_string);
    for end in &ends {
        let span = &spans[end["call_id"].as_str().unwrap()];
        let tool = end["tool"].as_str().unwrap();
        assert_eq!(span.name, format!("execute_tool {tool}"));
        assert_eq!(
            attr(span, "gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
        assert_eq!(attr(span, "gen_ai.tool.name").as_deref(), Some(tool));
        assert_eq!(
            attr(span, "toolpolicy.manifest.hash"),
            Some(committed.hash())
        );
        assert_eq!(
            attr(span, "toolpolicy.policy.hash"),
            Some(committed.tools[tool].policy.hash())
        );
        let code = end["code"].as_str();
        let refused = end["kind"] == "refused";
        let decision = if end["event"] == "denied" || refused {
            "deny"
        } else {
            "allow"
        };
        assert_eq!(
            attr(span, "toolpolicy.decision").as_deref(),
            Some(decision),
            "{end}"
        );
        assert_eq!(
            attr(span, "toolpolicy.denial.code").as_deref(),
            code,
            "{end}"
        );
        let error_type = code.or(end["kind"].as_str());
        assert_eq!(attr(span, "error.type").as_deref(), error_type, "{end}");
        let sandbox = &end["metadata"]["sandbox"];
        assert_eq!(
            attr(span, "toolpolicy.sandbox.profile").as_deref(),
            sandbox["profile"].as_str(),
            "{end}"
        );
        if let Some(rules) = sandbox["rules"].as_array() {
            let statuses: Vec<&str> = rules
                .iter()
                .map(|r| r["status"].as_str().unwrap())
                .collect();
            let weakest = ["not_enforced", "widened", "exact"]
                .into_iter()
                .find(|s| statuses.contains(s));
            assert_eq!(
                attr(span, "toolpolicy.sandbox.enforcement").as_deref(),
                weakest,
                "{end}"
            );
        }
    }
    let layers: Vec<Option<String>> = spans
        .values()
        .map(|s| attr(s, "toolpolicy.layer"))
        .collect();
    for layer in ["path_gate", "constraints"] {
        assert!(
            layers.contains(&Some(layer.to_string())),
            "a call refused by the {layer}: {layers:?}"
        );
    }
    if sandboxed {
        assert!(spans
            .values()
            .any(|s| attr(s, "toolpolicy.sandbox.profile").as_deref() == Some("strict")));
    }
}

/// The server as the official MCP Python SDK sees it: `mcp_client.py` lists the tools through
/// the SDK and compares each one (description, title, annotations) with what the policies
/// warrant, then makes an allowed and a denied call. Without the SDK the test is skipped, except
/// under `TOOLPOLICY_REQUIRE_KERNEL=1` (CI, whose `scripts/setup.sh` installs it).
#[test]
fn official_python_sdk_client() {
    let _lock = world_lock();
    let root = Path::new(toolpolicy_examples::world::ROOT);
    toolpolicy_examples::world::create(root).expect("lay out the demo world");
    let notes = std::fs::read_to_string(root.join("data/notes.md")).unwrap();
    let tools: serde_json::Map<String, Value> = PolicyServer::tool_specs()
        .into_iter()
        .map(|spec| {
            let want = json!({
                "description": spec.description,
                "annotations": hints(&spec.policy),
            });
            (spec.name.clone(), want)
        })
        .collect();
    let expected = json!({
        "tools": tools,
        "allowed": {"tool": "read_file", "arguments": {"path": "/tmp/toolpolicy-demo/data/notes.md"}, "text": notes},
        "denied": {"tool": "read_file", "arguments": {"path": "/tmp/toolpolicy-demo/data/../home/.ssh/id_rsa"}, "code": "fs.path_not_allowed"},
    });
    let dir = tempfile::tempdir().unwrap();
    let expected_path = dir.path().join("expected.json");
    std::fs::write(&expected_path, expected.to_string()).unwrap();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let run = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_mcp-server"))
        .arg(&expected_path)
        .stdin(Stdio::null())
        .output();
    let out = match run {
        Ok(out) => out,
        Err(e) => return kernel::missing(&format!("python3 cannot be started: {e}")),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) {
        return kernel::missing(&format!("the MCP Python SDK: {}", stderr.trim()));
    }
    assert!(
        out.status.success(),
        "the Python SDK client found problems ({}):\n{stderr}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("the client's JSON report");
    assert_eq!(
        report["tools"].as_array().map(Vec::len),
        Some(7),
        "{report}"
    );
    assert_eq!(report["problems"], json!([]), "{report}");
}
