//! Finding codes ([`policy_runtime::reference::findings`]), their severities, and the report
//! that collects them.
//!
//! ```
//! use manifest_verify::findings::{Code, Severity};
//!
//! assert_eq!(Code::FsWriteWidened.as_str(), "tool.fs.write.widened");
//! assert_eq!(Code::FsWriteWidened.severity(), Severity::Error);
//! assert_eq!(Code::NetNarrowed.severity(), Severity::Info);
//! assert_eq!("tool.env.widened".parse::<Code>(), Ok(Code::EnvWidened));
//! ```

use std::fmt;
use std::str::FromStr;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// How much a finding matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Information: a narrowing or a removed tool. Never fails the check.
    Info,
    /// A widening: the new manifest may permit something the old one did not. Fails the check.
    Error,
}

impl Severity {
    /// `"error"` or `"info"`, as in the JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident = $text:literal, $sev:ident, $summary:literal; )*) => {
        /// A stable finding code (the JSON field `code`, the SARIF `ruleId`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        impl Code {
            /// Every code, in documentation order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The stable text, e.g. `tool.fs.read.widened`.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $text,)* }
            }

            /// Whether the finding is a widening ([`Severity::Error`]) or information.
            pub fn severity(self) -> Severity {
                match self { $(Code::$variant => Severity::$sev,)* }
            }

            /// One sentence saying when the code is reported (SARIF rule description).
            pub fn summary(self) -> &'static str {
                match self { $(Code::$variant => $summary,)* }
            }
        }

        impl FromStr for Code {
            type Err = String;
            fn from_str(s: &str) -> Result<Code, String> {
                match s {
                    $($text => Ok(Code::$variant),)*
                    other => Err(format!("unknown finding code `{other}`")),
                }
            }
        }
    };
}

codes! {
    /// A tool exists only in the new manifest.
    ToolAdded = "tool.added", Error, "A tool exists only in the new manifest.";
    /// A tool exists only in the old manifest.
    ToolRemoved = "tool.removed", Info, "A tool exists only in the old manifest (not a widening).";
    /// The readable paths (`fs.read` ∪ `fs.write`) admit a path the old ones did not.
    FsReadWidened = "tool.fs.read.widened", Error, "The tool may read a path it could not read before.";
    /// `fs.write` admits a path the old globs did not.
    FsWriteWidened = "tool.fs.write.widened", Error, "The tool may write a path it could not write before.";
    /// The network policy admits an endpoint it did not.
    NetWidened = "tool.net.widened", Error, "The tool may connect to an endpoint it could not reach before.";
    /// The tool may start a program it could not.
    ExecWidened = "tool.exec.widened", Error, "The tool may start a program it could not start before.";
    /// The tool sees an environment variable it could not.
    EnvWidened = "tool.env.widened", Error, "The tool may see an environment variable it could not see before.";
    /// The command policy was removed: command lines are no longer judged.
    CommandsRemoved = "tool.commands.removed", Error, "The tool's command policy was removed, so its command lines are no longer judged.";
    /// The command policy's `max_level` was raised.
    CommandsLevelRaised = "tool.commands.level_raised", Error, "The tool may run commands of a higher level than before.";
    /// A `deny_args` rule was removed.
    CommandsDenyRemoved = "tool.commands.deny_removed", Error, "A denied argument of the tool's command policy was removed.";
    /// Chains are newly allowed.
    CommandsChainsAllowed = "tool.commands.chains_allowed", Error, "The tool may now run chains of commands in one call.";
    /// `approve_from` was raised or removed.
    CommandsApprovalLoosened = "tool.commands.approval_loosened", Error, "Fewer command levels of the tool need approval.";
    /// The risk class decreased.
    RiskLowered = "tool.risk.lowered", Error, "The tool's risk class decreased, so fewer approval hooks apply.";
    /// A per-invocation constraint was relaxed or removed.
    ConstraintsLoosened = "tool.constraints.loosened", Error, "A per-invocation constraint was relaxed or removed.";
    /// A resource limit was raised or removed.
    LimitsLoosened = "tool.limits.loosened", Error, "A resource limit was raised or removed.";
    /// A path or URL argument was added, or its role loosened.
    ArgsWidened = "tool.args.widened", Error, "A path or URL argument was added, or its role loosened (write → read or any, read → write or any, a role → unknown, a path ↔ a URL), so the gate admits more through it.";
    /// A grant amounts to more than it says (e.g. writing a binary the tool may run).
    Escalation = "tool.escalation", Error, "A grant amounts to more than it says: write access to an allowed binary, .git/hooks, shell rc files or /proc/*/mem, or read access to /proc/*/environ.";
    /// The readable paths were narrowed.
    FsReadNarrowed = "tool.fs.read.narrowed", Info, "The tool may no longer read some path (information).";
    /// The writable paths were narrowed.
    FsWriteNarrowed = "tool.fs.write.narrowed", Info, "The tool may no longer write some path (information).";
    /// The network policy was narrowed.
    NetNarrowed = "tool.net.narrowed", Info, "The tool may no longer reach some endpoint (information).";
    /// The exec policy was narrowed.
    ExecNarrowed = "tool.exec.narrowed", Info, "The tool may no longer start some program (information).";
    /// The command policy was added or tightened.
    CommandsNarrowed = "tool.commands.narrowed", Info, "The tool's command policy was added or tightened (information).";
    /// The env policy was narrowed.
    EnvNarrowed = "tool.env.narrowed", Info, "The tool may no longer see some environment variable (information).";
    /// The risk class increased.
    RiskNarrowed = "tool.risk.narrowed", Info, "The tool's risk class increased (information).";
    /// A constraint was tightened or added.
    ConstraintsNarrowed = "tool.constraints.narrowed", Info, "A per-invocation constraint was tightened or added (information).";
    /// A limit was lowered or added.
    LimitsNarrowed = "tool.limits.narrowed", Info, "A resource limit was lowered or added (information).";
    /// An argument's role was tightened or recorded, or it is no longer a path or URL.
    ArgsNarrowed = "tool.args.narrowed", Info, "A path or URL argument's role was tightened or first recorded, or it no longer carries a path or URL (information).";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One difference between the old and the new manifest.
///
/// It serializes to the JSON object of [`policy_runtime::reference::cli`]: `code`, `severity`,
/// `tool`, `path`, `message`,
/// `witness`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// What kind of difference.
    pub code: Code,
    /// The tool's name.
    pub tool: String,
    /// Where in the manifest, e.g. `tools.fetch.net` (dotted, starting at the document root).
    pub path: String,
    /// One sentence for a reviewer.
    pub message: String,
    /// A concrete path, `host:port`, variable name or program that is newly admitted (or, for a
    /// narrowing, no longer admitted). `None` only when there is nothing concrete to show
    /// (`tool.removed`, a risk class, a limit).
    pub witness: Option<String>,
    /// The old value, as manifest text (`None` when the part or tool is absent).
    pub old: Option<String>,
    /// The new value, as manifest text (`None` when the part or tool is absent).
    pub new: Option<String>,
}

impl Finding {
    /// The severity of the finding's code.
    pub fn severity(&self) -> Severity {
        self.code.severity()
    }

    /// The part of the tool this finding is about, e.g. `fs.write` (the `path` without
    /// `tools.<name>.`), or `""` for the whole tool.
    pub fn part(&self) -> &str {
        let prefix_len = "tools.".len() + self.tool.len();
        self.path
            .get(prefix_len..)
            .map_or("", |p| p.trim_start_matches('.'))
    }

    /// The message and the witness as sentences, for plain-text outputs (SARIF, GitHub
    /// annotations): `` `t` may now start `/bin/sh`, which the old policy did not allow.
    /// Witness: /bin/sh.``
    ///
    /// ```
    /// use manifest_verify::{Code, Finding};
    ///
    /// let f = Finding {
    ///     code: Code::ExecWidened,
    ///     tool: "t".into(),
    ///     path: "tools.t.exec".into(),
    ///     message: "`t` may now start `git`, which the old policy did not allow".into(),
    ///     witness: Some("git".into()),
    ///     old: None,
    ///     new: None,
    /// };
    /// assert_eq!(f.text(), "`t` may now start `git`, which the old policy did not allow. Witness: git.");
    /// ```
    pub fn text(&self) -> String {
        let message = self.message.trim_end();
        let mut text = message.to_string();
        if !message.ends_with(['.', '!', '?']) {
            text.push('.');
        }
        if let Some(w) = &self.witness {
            text.push_str(" Witness: ");
            text.push_str(w);
            text.push('.');
        }
        text
    }

    /// [`Finding::part`], or `tool` for findings about the whole tool.
    pub fn part_or_tool(&self) -> &str {
        match self.part() {
            "" => "tool",
            part => part,
        }
    }
}

impl Serialize for Finding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Finding", 6)?;
        st.serialize_field("code", &self.code)?;
        st.serialize_field("severity", self.severity().as_str())?;
        st.serialize_field("tool", &self.tool)?;
        st.serialize_field("path", &self.path)?;
        st.serialize_field("message", &self.message)?;
        st.serialize_field("witness", &self.witness)?;
        st.end()
    }
}

/// Every finding of one comparison, sorted by tool, then by part.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The findings, widenings and information alike.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Whether at least one finding is a widening.
    pub fn widened(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.severity() == Severity::Error)
    }

    /// The process exit status ([`policy_runtime::reference::cli`]): 1 when widened, otherwise 0.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.widened())
    }

    /// The widenings only.
    pub fn widenings(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity() == Severity::Error)
    }

    /// The codes of all findings, in order (handy in tests).
    pub fn codes(&self) -> Vec<Code> {
        self.findings.iter().map(|f| f.code).collect()
    }
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Report", 2)?;
        st.serialize_field("widened", &self.widened())?;
        st.serialize_field("findings", &self.findings)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_cover_spec() {
        for code in Code::ALL {
            assert_eq!(code.as_str().parse::<Code>(), Ok(*code));
            let narrowed = code.as_str().ends_with(".narrowed") || *code == Code::ToolRemoved;
            assert_eq!(code.severity() == Severity::Info, narrowed, "{code}");
        }
        assert_eq!(Code::ALL.len(), 27);
    }

    #[test]
    fn json_has_exactly_the_spec_fields() {
        let f = Finding {
            code: Code::NetWidened,
            tool: "fetch".into(),
            path: "tools.fetch.net".into(),
            message: "m".into(),
            witness: Some("a.example.com:443".into()),
            old: None,
            new: None,
        };
        assert_eq!(f.part(), "net");
        let v = serde_json::to_value(&f).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 6);
        assert_eq!(v["severity"], "error");
        let r = Report { findings: vec![f] };
        assert!(r.widened());
        assert_eq!(r.exit_code(), 1);
    }
}
