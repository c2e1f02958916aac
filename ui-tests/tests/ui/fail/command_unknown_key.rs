use policy_macros::tool;
use policy_runtime::command::ShellCommand;

#[tool(policy(exec = ["sh"]), commands(max_level = 1, chain = true, deny_args = ["-c"]))]
fn run(command: ShellCommand) -> String {
    command.into_string()
}

fn main() {}
