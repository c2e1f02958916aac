//! A command policy: the attribute builds the same policy as JSON, and the command parameter
//! (`ShellCommand` or `CommandLine`) is the spec's command argument, judged before the body.

use policy_macros::tool;
use policy_runtime::command::{CommandForm, CommandLine, Level, ShellCommand};
use policy_runtime::registry::{Registry, ToolCall};
use policy_runtime::tool::Tool;
use serde_json::json;

#[tool(
    policy(exec = ["/bin/sh", "git", "make"], net = deny),
    commands(max_level = 2, deny_args(git = ["-c", "--upload-pack"], cargo = ["publish"]), chains = true, approve_from = 2),
)]
fn run_shell(command: ShellCommand) -> String {
    format!("would run {}", command.as_str())
}

#[tool(policy(exec = ["git"]), commands(max_level = 0))]
fn git_read(argv: CommandLine) -> String {
    argv.join(" ")
}

fn main() {
    assert_eq!(
        serde_json::to_value(&run_shell {}.spec().policy).unwrap(),
        json!({
            "net": "deny",
            "exec": {"allow": ["/bin/sh", "git", "make"]},
            "commands": {"max_level": 2, "deny_args": {"cargo": ["publish"], "git": ["-c", "--upload-pack"]}, "chains": true, "approve_from": 2},
        })
    );
    let spec = run_shell {}.spec();
    assert_eq!(spec.command_args[0].name, "command");
    assert_eq!(spec.command_args[0].form, CommandForm::Shell);
    assert_eq!(spec.input_schema["properties"]["command"]["type"], "string");
    let git = git_read {}.spec();
    assert_eq!(git.policy.commands.as_ref().unwrap().max_level, Level::ReadOnly);
    assert_eq!(git.command_args[0].form, CommandForm::Argv);

    let mut registry = Registry::new();
    registry.register(run_shell {}).unwrap();
    registry.register(git_read {}).unwrap();
    let mut run = registry.start_invocation();
    let r = run.call_blocking(ToolCall::new("run_shell", json!({"command": "make test && git status"})));
    assert!(r.is_ok(), "{}", r.content);
    let r = run.call_blocking(ToolCall::new("run_shell", json!({"command": "git push"})));
    assert!(r.content.contains("level 5"), "{}", r.content);
    let r = run.call_blocking(ToolCall::new("git_read", json!({"argv": ["git", "log"]})));
    assert!(r.is_ok(), "{}", r.content);
    let r = run.call_blocking(ToolCall::new("git_read", json!({"argv": ["git", "commit", "-m", "x"]})));
    assert!(r.content.contains("level 2"), "{}", r.content);
}
