use policy_macros::tool;
use policy_runtime::command::ShellCommand;

#[tool(policy(exec = ["sh"]), commands(max_level = 1, approve_from = 3))]
fn run(command: ShellCommand) -> String {
    command.into_string()
}

fn main() {}
