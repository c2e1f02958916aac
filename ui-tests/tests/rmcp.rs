//! `#[tool_policy]` above rmcp's own `#[tool]`, inside a `#[tool_router]` impl: rmcp still
//! routes the tools, each tool keeps its doc comment as its MCP description (which rmcp alone
//! drops when another attribute follows the doc lines), the policy reaches the manifest, and a
//! denied call returns a tool error without running the body. The other order is a compile
//! error (`ui/fail/tool_policy_below_rmcp_tool.rs`).

use std::sync::atomic::{AtomicU32, Ordering};

use policy_macros::tool_policy;
use policy_runtime::macro_support::manifest_of;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{tool, tool_router};

static RUNS: AtomicU32 = AtomicU32::new(0);

#[derive(serde::Deserialize, serde::Serialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct ReadArgs {
    path: String,
}

#[derive(serde::Deserialize, serde::Serialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct WriteArgs {
    path: String,
    text: String,
}

#[derive(Clone)]
#[allow(dead_code)]
struct Files {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Files {
    /// Read a file under /data.
    #[tool_policy(policy(fs.read = "/data/**", net = deny, risk = low))]
    #[tool]
    async fn read_file(&self, Parameters(args): Parameters<ReadArgs>) -> String {
        RUNS.fetch_add(1, Ordering::SeqCst);
        format!("read {}", args.path)
    }

    /// Write a file under /out.
    #[tool_policy(policy(fs.read = "/data/**", fs.write = ["/out/**"], net = deny), paths(path = write))]
    #[rmcp::tool(title = "Write a file", description = "Written for rmcp.")]
    async fn write_file(
        &self,
        Parameters(args): Parameters<WriteArgs>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "wrote {} bytes to {}",
            args.text.len(),
            args.path
        ))]))
    }

    /// Never allowed.
    ///
    /// A second paragraph.
    #[tool_policy(policy(exec = allow), constraints(forbidden = true))]
    #[tool]
    #[allow(clippy::unnecessary_wraps)]
    fn shell(&self, Parameters(args): Parameters<ReadArgs>) -> Result<String, String> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        Ok(args.path)
    }
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn rmcp_still_routes_every_tool() {
    let router = Files::tool_router();
    let mut names: Vec<String> = router
        .list_all()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["read_file", "shell", "write_file"]);
}

#[test]
fn descriptions_reach_the_client() {
    let router = Files::tool_router();
    let description = |name: &str| {
        router
            .list_all()
            .into_iter()
            .find(|t| t.name == name)
            .and_then(|t| t.description.map(|d| d.to_string()))
    };
    assert_eq!(
        description("read_file").as_deref(),
        Some("Read a file under /data.")
    );
    // An attribute after `#[tool]` would make rmcp drop the doc comment on its own.
    assert_eq!(
        description("shell").as_deref(),
        Some(Files::shell_tool_spec().description.as_str())
    );
    assert_eq!(
        Files::shell_tool_spec().description,
        "Never allowed.\n\nA second paragraph."
    );
    // A description written for rmcp is rmcp's to keep.
    assert_eq!(
        description("write_file").as_deref(),
        Some("Written for rmcp.")
    );
}

#[test]
fn policies_reach_the_manifest() {
    let manifest = manifest_of([
        Files::read_file_tool_spec(),
        Files::write_file_tool_spec(),
        Files::shell_tool_spec(),
    ]);
    policy_runtime::testing::assert_manifest_fresh("tests/rmcp-manifest.json", &manifest);
    assert_eq!(
        Files::read_file_tool_spec().description,
        "Read a file under /data."
    );
}

#[test]
fn denied_calls_return_a_tool_error_without_running_the_body() {
    let files = Files {
        tool_router: Files::tool_router(),
    };
    let before = RUNS.load(Ordering::SeqCst);
    let denied = pollster::block_on(files.read_file(Parameters(ReadArgs {
        path: "/data/../etc/passwd".into(),
    })));
    assert!(
        denied.starts_with("Denied: `read_file` was not run."),
        "{denied}"
    );
    // `paths(path = write)`: readable is not enough.
    let denied = pollster::block_on(files.write_file(Parameters(WriteArgs {
        path: "/data/a".into(),
        text: "x".into(),
    })))
    .unwrap();
    assert_eq!(denied.is_error, Some(true));
    assert!(text(&denied).contains("/data/a"), "{}", text(&denied));
    let forbidden = files.shell(Parameters(ReadArgs {
        path: "/bin/sh".into(),
    }));
    assert!(forbidden.unwrap_err().contains("forbidden"));
    assert_eq!(
        RUNS.load(Ordering::SeqCst),
        before,
        "no denied call may run a body"
    );

    let ok = pollster::block_on(files.read_file(Parameters(ReadArgs {
        path: "/data/a.csv".into(),
    })));
    assert_eq!(ok, "read /data/a.csv");
    let ok = pollster::block_on(files.write_file(Parameters(WriteArgs {
        path: "/out/r.md".into(),
        text: "hello".into(),
    })))
    .unwrap();
    assert_eq!(text(&ok), "wrote 5 bytes to /out/r.md");
    assert_eq!(RUNS.load(Ordering::SeqCst), before + 2);
}
