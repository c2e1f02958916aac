//! Sync and async, free functions and methods, borrowed parameters, the call context, and every
//! supported return type; each tool is dispatched through a registry.

use std::sync::Arc;

use policy_macros::{tool, toolset};
use policy_runtime::macro_support::registry_of;
use policy_runtime::registry::ToolCall;
use policy_runtime::tool::{CallContext, ToolError, ToolOutput};
use serde_json::json;

/// Join words.
#[tool(policy(net = deny))]
fn join(words: &[String], sep: &str) -> String {
    words.join(sep)
}

#[tool(policy(net = deny))]
async fn shout(text: String) -> Result<String, ToolError> {
    Ok(text.to_uppercase())
}

#[tool(policy(net = deny))]
fn who(ctx: CallContext) -> &'static str {
    if ctx.tool == "who" {
        "me"
    } else {
        "?"
    }
}

#[tool(policy(net = deny))]
fn nothing() {}

#[tool(policy(net = deny))]
fn structured(n: u64) -> serde_json::Value {
    json!({"double": n * 2})
}

#[tool(policy(net = deny))]
fn fails(ctx: &CallContext) -> Result<ToolOutput, std::io::Error> {
    Err(std::io::Error::other(format!("{} broke", ctx.tool)))
}

#[tool(policy(net = deny))]
fn r#type(r#in: bool) -> String {
    r#in.to_string()
}

struct Counter(std::sync::atomic::AtomicU64);

#[toolset]
impl Counter {
    /// Add to the counter.
    #[tool(policy(net = deny))]
    async fn add(&self, by: u64) -> String {
        let old = self.0.fetch_add(by, std::sync::atomic::Ordering::SeqCst);
        (old + by).to_string()
    }

    #[tool(policy(net = deny))]
    fn zero() -> String {
        "0".into()
    }
}

fn main() {
    // Still callable as written.
    assert_eq!(join(&["a".into(), "b".into()], "-"), "a-b");
    assert_eq!(pollster::block_on(shout("x".into())).unwrap(), "X");

    let counter = Arc::new(Counter(Default::default()));
    let mut tools = policy_runtime::tools![join, shout, who, nothing, structured, fails, r#type];
    tools.extend(counter.tools());
    let registry = registry_of(tools).unwrap();
    let mut run = registry.start_invocation();
    let mut call =
        |name: &str, args: serde_json::Value| run.call_blocking(ToolCall::new(name, args));
    assert_eq!(
        call("join", json!({"words": ["a", "b"], "sep": "+"})).content,
        "a+b"
    );
    assert_eq!(call("shout", json!({"text": "hi"})).content, "HI");
    assert_eq!(call("who", json!({})).content, "me");
    assert_eq!(call("nothing", json!({})).content, "ok");
    assert_eq!(
        call("structured", json!({"n": 4})).content,
        r#"{"double":8}"#
    );
    assert_eq!(
        call("fails", json!({})).error().unwrap().message(),
        "fails broke"
    );
    assert_eq!(call("type", json!({"in": true})).content, "true");
    assert_eq!(call("add", json!({"by": 2})).content, "2");
    assert_eq!(call("add", json!({"by": 3})).content, "5");
    assert_eq!(call("zero", json!({})).content, "0");
    assert_eq!(Counter::tool_specs()[0].description, "Add to the counter.");
    assert_eq!(join::tool_spec().description, "Join words.");
}
