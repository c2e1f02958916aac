//! The command policy of an exec tool, as declared.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Level;
use crate::policy::ProgramName;

/// What the commands an exec tool is asked to run may do: the part of the exec stance that
/// judges a command line before anything starts (the kernel's exec allow-list still decides
/// which programs can start at all).
///
/// In a manifest or policy file it sits next to `exec`:
///
/// ```
/// use policy_runtime::command::Level;
/// use policy_runtime::policy::ToolPolicy;
///
/// let policy = ToolPolicy::from_toml_str("p.toml", r#"
///     exec = { allow = ["sh", "git", "make"] }
///     [commands]
///     max_level = 2
///     deny_args = { git = ["--no-verify"] }
///     chains = true
///     approve_from = 2
/// "#)?;
/// let commands = policy.commands.unwrap();
/// assert_eq!(commands.max_level, Level::ProjectWrite);
/// assert!(commands.chains);
/// # Ok::<(), policy_runtime::LoadError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Repr", into = "Repr")]
pub struct CommandPolicy {
    /// The highest level a command may have (0 to 5; level 6 is always denied).
    pub max_level: Level,
    /// Per program (a bare name), the arguments it may not be given: an exact word (`push`,
    /// `--force`), a long option also in its `--opt=value` form, or a short option also glued
    /// to its value (`-c` denies `-cfoo`). These add to the built-in rules; nothing removes
    /// those.
    pub deny_args: BTreeMap<ProgramName, Vec<String>>,
    /// Whether a command may be a chain (`|`, `&&`, `||`, `;`, `&`, a newline, a subshell or a
    /// `{ ...; }` group). Unspecified means no.
    pub chains: bool,
    /// The lowest level whose commands need an approval hook's yes; unspecified means none
    /// does by level (a file piped to the network always does).
    pub approve_from: Option<Level>,
}

impl CommandPolicy {
    /// A policy admitting commands up to `max_level`, with no chains, no extra denied
    /// arguments and no approval by level.
    ///
    /// ```
    /// use policy_runtime::command::{CommandPolicy, Level};
    /// let p = CommandPolicy::up_to(Level::Build);
    /// assert!(!p.chains);
    /// ```
    pub fn up_to(max_level: Level) -> CommandPolicy {
        CommandPolicy {
            max_level,
            deny_args: BTreeMap::new(),
            chains: false,
            approve_from: None,
        }
    }

    /// The arguments denied to `program` (a bare name) by this policy.
    pub fn denied_args(&self, program: &str) -> &[String] {
        self.deny_args
            .iter()
            .find(|(p, _)| p.as_str() == program)
            .map_or(&[], |(_, args)| args.as_slice())
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Repr {
    max_level: Level,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    deny_args: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chains: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approve_from: Option<Level>,
}

impl TryFrom<Repr> for CommandPolicy {
    type Error = String;
    fn try_from(r: Repr) -> Result<CommandPolicy, String> {
        CommandPolicy::build(r.max_level, r.deny_args, r.chains, r.approve_from)
    }
}

impl CommandPolicy {
    /// Builds a command policy from its parts as written, with the checks every format
    /// shares (JSON, TOML and the attribute): `max_level` below 6, `approve_from` at most
    /// `max_level`, `deny_args` keyed by bare program names with non-empty arguments.
    ///
    /// ```
    /// use policy_runtime::command::{CommandPolicy, Level};
    /// let p = CommandPolicy::build(Level::Build, [("git".to_string(), vec!["-c".to_string()])], None, None).unwrap();
    /// assert_eq!(p.denied_args("git"), ["-c"]);
    /// assert!(CommandPolicy::build(Level::AlwaysDenied, [], None, None).is_err());
    /// ```
    pub fn build(
        max_level: Level,
        deny_args: impl IntoIterator<Item = (String, Vec<String>)>,
        chains: Option<bool>,
        approve_from: Option<Level>,
    ) -> Result<CommandPolicy, String> {
        if max_level == Level::AlwaysDenied {
            return Err("`max_level` cannot be 6: level 6 is always denied; the highest is 5 (outbound network)".into());
        }
        if let Some(from) = approve_from {
            if from > max_level {
                return Err(format!(
                    "`approve_from` ({}) is above `max_level` ({}): no admitted command could ever need approval",
                    from.number(),
                    max_level.number()
                ));
            }
        }
        let mut denied = BTreeMap::new();
        for (program, args) in deny_args {
            let name: ProgramName = program.parse().map_err(|e| format!("`deny_args`: {e}"))?;
            if name.is_path() {
                return Err(format!(
                    "`deny_args`: key `{program}` must be a bare program name (`git`), not a path"
                ));
            }
            if let Some(bad) = args.iter().find(|a| a.is_empty() || a.contains('\0')) {
                return Err(format!(
                    "`deny_args.{program}`: {bad:?} is not an argument (empty or with NUL)"
                ));
            }
            denied.insert(name, args);
        }
        Ok(CommandPolicy {
            max_level,
            deny_args: denied,
            chains: chains.unwrap_or(false),
            approve_from,
        })
    }
}

impl From<CommandPolicy> for Repr {
    fn from(p: CommandPolicy) -> Repr {
        Repr {
            max_level: p.max_level,
            deny_args: p
                .deny_args
                .into_iter()
                .map(|(k, v)| (k.as_str().to_string(), v))
                .collect(),
            chains: p.chains.then_some(true),
            approve_from: p.approve_from,
        }
    }
}
