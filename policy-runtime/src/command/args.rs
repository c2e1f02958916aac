//! Tool parameter types that carry a command: the `#[tool]` attribute declares a parameter of
//! either type as the tool's command argument, judged by the command policy before the body
//! runs.

use std::ops::Deref;

use serde::{Deserialize, Serialize};

/// A shell command line, run as `sh -c STRING`.
///
/// ```
/// use policy_runtime::command::ShellCommand;
/// let c: ShellCommand = serde_json::from_value(serde_json::json!("make test"))?;
/// assert_eq!(c.as_str(), "make test");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ShellCommand(String);

impl ShellCommand {
    /// Wraps a command line.
    pub fn new(line: impl Into<String>) -> ShellCommand {
        ShellCommand(line.into())
    }

    /// The command line.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The command line, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl Deref for ShellCommand {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// An argument vector, program first, run without a shell.
///
/// ```
/// use policy_runtime::command::CommandLine;
/// let c: CommandLine = serde_json::from_value(serde_json::json!(["git", "status"]))?;
/// assert_eq!(c.program(), Some("git"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommandLine(Vec<String>);

impl CommandLine {
    /// Wraps an argument vector.
    pub fn new(argv: impl IntoIterator<Item = impl Into<String>>) -> CommandLine {
        CommandLine(argv.into_iter().map(Into::into).collect())
    }

    /// The program, `argv[0]`.
    pub fn program(&self) -> Option<&str> {
        self.0.first().map(String::as_str)
    }

    /// The argument vector, owned.
    pub fn into_vec(self) -> Vec<String> {
        self.0
    }
}

impl Deref for CommandLine {
    type Target = [String];
    fn deref(&self) -> &[String] {
        &self.0
    }
}
