//! The [policy model](crate::reference::policy).
//!
//! Every part is an `Option`: `None` is *unspecified*, which is not the same as "none"
//! (`Some` of an empty list, or `deny`). The distinction survives every round trip through JSON
//! and TOML.
//!
//! ```
//! use policy_runtime::policy::{NetPolicy, ToolPolicy};
//!
//! let policy: ToolPolicy = serde_json::from_str(
//!     r#"{"fs": {"read": [], "write": ["/out/**"]}, "net": "deny"}"#,
//! )?;
//! assert!(policy.fs.read.as_ref().unwrap().is_empty()); // declared: none
//! assert!(policy.exec.is_none()); // unspecified
//! assert_eq!(policy.net, Some(NetPolicy::Deny));
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::command::CommandPolicy;
use crate::glob::GlobList;
use crate::host::HostPattern;
use crate::objects::{map_only, Object};

/// A tool's declared policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    /// Risk class; unspecified means [`Risk::Medium`] at run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    /// Filesystem globs.
    #[serde(
        default,
        skip_serializing_if = "FsPolicy::is_unspecified",
        deserialize_with = "map_only"
    )]
    pub fs: FsPolicy,
    /// Outbound network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<NetPolicy>,
    /// Starting other programs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecPolicy>,
    /// What the command lines an exec tool runs may do (its part of the exec stance that
    /// judges arguments; see [`crate::command`]). Unspecified: no command is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<CommandPolicy>,
    /// Environment variables; unspecified inherits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<EnvPolicy>,
    /// Per agent invocation constraints.
    #[serde(
        default,
        skip_serializing_if = "Constraints::is_unspecified",
        deserialize_with = "consistent_constraints"
    )]
    pub constraints: Constraints,
    /// Resource bounds of a subprocess tool.
    #[serde(
        default,
        skip_serializing_if = "Limits::is_unspecified",
        deserialize_with = "map_only"
    )]
    pub limits: Limits,
}

impl Object for ToolPolicy {
    const EXPECTED: &'static str =
        "a tool policy object (with `risk`, `fs`, `net`, `exec`, `commands`, `env`, `constraints`, `limits`)";
}

impl Object for FsPolicy {
    const EXPECTED: &'static str = "an `fs` object with `read` and/or `write` lists of globs";
}

impl Object for Constraints {
    const EXPECTED: &'static str = "a `constraints` object (with `max_invocations`, `only_after`, `forbidden`, `requires_approval`)";
}

impl Object for Limits {
    const EXPECTED: &'static str = "a `limits` object (with `timeout_ms`, `memory_bytes`, `cpu_seconds`, `max_processes`, `max_output_bytes`, `max_file_bytes`, `max_open_files`)";
}

impl ToolPolicy {
    /// The risk in force: the declared one, or [`Risk::Medium`].
    pub fn effective_risk(&self) -> Risk {
        self.risk.unwrap_or(Risk::Medium)
    }

    /// Whether the in-process path gate is active (opt-in by declaring `fs`; see
    /// [the gate](crate::reference::policy)).
    pub fn gates_paths(&self) -> bool {
        !self.fs.is_unspecified()
    }

    /// The network the tool may reach. Unspecified is [`Stance::Nothing`] (the sandbox denies
    /// it, the lint reports a use of it), as are `deny` and an empty host list (`net = none`).
    ///
    /// ```
    /// use policy_runtime::policy::{Stance, ToolPolicy};
    ///
    /// let none = ToolPolicy::from_json_str("p", r#"{"net": {"hosts": []}}"#)?;
    /// assert!(matches!(none.net_stance(), Stance::Nothing));
    /// assert!(matches!(ToolPolicy::default().net_stance(), Stance::Nothing));
    /// let one = ToolPolicy::from_json_str("p", r#"{"net": {"hosts": ["a.example:443"]}}"#)?;
    /// assert!(matches!(one.net_stance(), Stance::Only(h) if h.len() == 1));
    /// # Ok::<(), policy_runtime::LoadError>(())
    /// ```
    pub fn net_stance(&self) -> Stance<'_, HostPattern> {
        self.net.as_ref().map_or(Stance::Nothing, NetPolicy::stance)
    }

    /// The programs the tool may start. Unspecified is [`Stance::Anything`] (a tool that
    /// declares nothing about exec is not restricted); `deny` and an empty list
    /// (`exec = none`) are [`Stance::Nothing`].
    ///
    /// ```
    /// use policy_runtime::policy::{Stance, ToolPolicy};
    ///
    /// assert!(matches!(ToolPolicy::default().exec_stance(), Stance::Anything));
    /// let none = ToolPolicy::from_json_str("p", r#"{"exec": {"allow": []}}"#)?;
    /// assert!(matches!(none.exec_stance(), Stance::Nothing));
    /// # Ok::<(), policy_runtime::LoadError>(())
    /// ```
    pub fn exec_stance(&self) -> Stance<'_, ProgramName> {
        match &self.exec {
            None | Some(ExecPolicy::Allow) => Stance::Anything,
            Some(ExecPolicy::Deny) => Stance::Nothing,
            Some(ExecPolicy::AllowList(programs)) => Stance::of_list(programs),
        }
    }

    /// The environment variables the tool sees. Unspecified is [`Stance::Anything`] (the
    /// environment is inherited); `deny` and an empty list (`env = none`) are
    /// [`Stance::Nothing`] (an empty environment).
    ///
    /// ```
    /// use policy_runtime::policy::{Stance, ToolPolicy};
    ///
    /// assert!(matches!(ToolPolicy::default().env_stance(), Stance::Anything));
    /// let home = ToolPolicy::from_json_str("p", r#"{"env": {"allow": ["HOME"]}}"#)?;
    /// assert!(home.env_stance().admits_any(|p| p.matches("HOME")));
    /// assert!(!home.env_stance().admits_any(|p| p.matches("PATH")));
    /// # Ok::<(), policy_runtime::LoadError>(())
    /// ```
    pub fn env_stance(&self) -> Stance<'_, EnvPattern> {
        match &self.env {
            None => Stance::Anything,
            Some(EnvPolicy::Deny) => Stance::Nothing,
            Some(EnvPolicy::Allow(patterns)) => Stance::of_list(patterns),
        }
    }
}

/// The effective reach of `net`, `exec` or `env`: what the policy lets the tool use, with
/// *unspecified* and *empty list* already resolved (see [`ToolPolicy::net_stance`],
/// [`ToolPolicy::exec_stance`], [`ToolPolicy::env_stance`]).
///
/// It is the one place where the declaration gets its meaning: the capability lint's grants,
/// the sandbox plan, the verifier's comparisons and every other consumer match on it rather
/// than on the declared `Option`s, so they cannot disagree about `net = none` or an
/// unspecified `exec`.
#[derive(Debug, PartialEq, Eq)]
pub enum Stance<'a, T> {
    /// Nothing at all: `deny`, an empty list, or unspecified `net`.
    Nothing,
    /// Anything: `allow`, or unspecified `exec` and `env`.
    Anything,
    /// Only what these entries admit; never empty.
    Only(&'a [T]),
}

// Derived `Clone`/`Copy` would require `T: Copy`; a stance only borrows its list.
impl<T> Clone for Stance<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Stance<'_, T> {}

impl<'a, T> Stance<'a, T> {
    /// `Only(list)`, or `Nothing` when the list is empty.
    fn of_list(list: &'a [T]) -> Stance<'a, T> {
        if list.is_empty() {
            Stance::Nothing
        } else {
            Stance::Only(list)
        }
    }

    /// Whether the tool may use the capability at all.
    pub fn allows_some(&self) -> bool {
        !matches!(self, Stance::Nothing)
    }

    /// Whether something is admitted that `entry` admits for one of the listed entries:
    /// always under [`Stance::Anything`], never under [`Stance::Nothing`].
    pub fn admits_any(&self, entry: impl FnMut(&T) -> bool) -> bool {
        match self {
            Stance::Nothing => false,
            Stance::Anything => true,
            Stance::Only(list) => list.iter().any(entry),
        }
    }
}

/// Risk classes, ordered from low to critical.
///
/// ```
/// use policy_runtime::policy::Risk;
/// assert!(Risk::Low < Risk::Critical);
/// assert_eq!("high".parse::<Risk>().unwrap(), Risk::High);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Read-only, local.
    Low,
    /// The default.
    Medium,
    /// Changes things or reaches out.
    High,
    /// Irreversible or far-reaching.
    Critical,
}

impl Risk {
    /// The lowercase name used in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
            Risk::Critical => "critical",
        }
    }
}

impl<'de> Deserialize<'de> for Risk {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Risk, D::Error> {
        struct RiskVisitor;
        impl serde::de::Visitor<'_> for RiskVisitor {
            type Value = Risk;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a risk: \"low\", \"medium\", \"high\" or \"critical\"")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Risk, E> {
                s.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(RiskVisitor)
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Risk {
    type Err = String;
    fn from_str(s: &str) -> Result<Risk, String> {
        match s {
            "low" => Ok(Risk::Low),
            "medium" => Ok(Risk::Medium),
            "high" => Ok(Risk::High),
            "critical" => Ok(Risk::Critical),
            other => Err(format!(
                "unknown risk `{other}`: expected low, medium, high or critical"
            )),
        }
    }
}

/// Filesystem globs. `write` implies read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsPolicy {
    /// Paths the tool may read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<GlobList>,
    /// Paths the tool may create, modify or delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<GlobList>,
}

impl FsPolicy {
    /// Neither `read` nor `write` is declared.
    pub fn is_unspecified(&self) -> bool {
        self.read.is_none() && self.write.is_none()
    }
}

/// Outbound network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetPolicy {
    /// No network at all.
    Deny,
    /// Any destination.
    Allow,
    /// Only these `host:port` endpoints.
    Hosts(Vec<HostPattern>),
}

impl NetPolicy {
    /// The reach of a declared `net` (an unspecified one is [`ToolPolicy::net_stance`]'s to
    /// read): `deny` and an empty host list are [`Stance::Nothing`].
    ///
    /// ```
    /// use policy_runtime::policy::{NetPolicy, Stance};
    ///
    /// assert!(matches!(NetPolicy::Hosts(vec![]).stance(), Stance::Nothing));
    /// assert!(matches!(NetPolicy::Allow.stance(), Stance::Anything));
    /// ```
    pub fn stance(&self) -> Stance<'_, HostPattern> {
        match self {
            NetPolicy::Deny => Stance::Nothing,
            NetPolicy::Allow => Stance::Anything,
            NetPolicy::Hosts(hosts) => Stance::of_list(hosts),
        }
    }
}

/// Starting other programs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecPolicy {
    /// No other program may be started.
    Deny,
    /// Any program.
    Allow,
    /// Only these programs: absolute paths, or bare names looked up on `PATH`.
    AllowList(Vec<ProgramName>),
}

/// Environment variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvPolicy {
    /// An empty environment.
    Deny,
    /// Only variables matching these names or `PREFIX*` patterns.
    Allow(Vec<EnvPattern>),
}

/// An exec allow-list entry: an absolute normalized path or a bare program name.
///
/// ```
/// use policy_runtime::policy::ProgramName;
/// assert!("rg".parse::<ProgramName>().is_ok());
/// assert!("/usr/bin/git".parse::<ProgramName>().is_ok());
/// assert!("bin/git".parse::<ProgramName>().is_err());
/// assert!("/usr/../bin/sh".parse::<ProgramName>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProgramName(String);

impl ProgramName {
    /// The text as declared.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is an absolute path rather than a name looked up on `PATH`.
    pub fn is_path(&self) -> bool {
        self.0.starts_with('/')
    }
}

impl FromStr for ProgramName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.is_empty() || s.contains('\0') {
            return Err("a program name must be non-empty and contain no NUL".into());
        }
        if s.starts_with('/') {
            let normalized = crate::path::normalize(s);
            if normalized != s || s.ends_with('/') {
                return Err(format!(
                    "program path `{s}` is not normalized; write `{normalized}`"
                ));
            }
        } else if s.contains('/') {
            return Err(format!(
                "program `{s}` must be a bare name (`rg`) or an absolute path (`/usr/bin/rg`)"
            ));
        }
        Ok(ProgramName(s.to_string()))
    }
}

impl fmt::Display for ProgramName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An environment variable name, or a `PREFIX*` pattern.
///
/// ```
/// use policy_runtime::policy::EnvPattern;
/// let p: EnvPattern = "AWS_*".parse().unwrap();
/// assert!(p.matches("AWS_REGION"));
/// assert!(!p.matches("HOME"));
/// assert!("BAD-NAME".parse::<EnvPattern>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EnvPattern(String);

impl EnvPattern {
    /// The text as declared.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The prefix of a `PREFIX*` pattern, or `None` for an exact name.
    pub fn prefix(&self) -> Option<&str> {
        self.0.strip_suffix('*')
    }

    /// Whether a variable name is admitted.
    pub fn matches(&self, name: &str) -> bool {
        match self.prefix() {
            Some(prefix) => name.starts_with(prefix),
            None => name == self.0,
        }
    }
}

impl FromStr for EnvPattern {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let body = s.strip_suffix('*').unwrap_or(s);
        let valid_name = body
            .chars()
            .enumerate()
            .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
        if !valid_name || (body.is_empty() && s != "*") {
            return Err(format!(
                "`{s}` is not an environment variable name or `PREFIX*` pattern (letters, digits, `_`, optional trailing `*`)"
            ));
        }
        Ok(EnvPattern(s.to_string()))
    }
}

impl fmt::Display for EnvPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Per agent invocation constraints.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constraints {
    /// At most this many calls per agent invocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_invocations: Option<u32>,
    /// Each of these tools must have run successfully earlier in the invocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only_after: Option<Vec<String>>,
    /// The tool may never be called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbidden: Option<bool>,
    /// Every call needs an approval hook's yes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_approval: Option<bool>,
}

impl Constraints {
    /// No constraint is declared.
    pub fn is_unspecified(&self) -> bool {
        *self == Constraints::default()
    }
}

/// Reads constraints as an object, refusing those that contradict `forbidden = true`
/// ([`crate::conflict`]); the error is raised at the object and names the contradicting key
/// first, which the file diagnostics point at and underline (JSON and TOML alike).
pub(crate) fn consistent_constraints<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Constraints, D::Error> {
    let c: Constraints = map_only(d)?;
    let conflicts = c.forbidden_conflicts();
    if conflicts.is_empty() {
        return Ok(c);
    }
    Err(serde::de::Error::custom(
        conflicts
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join("; "),
    ))
}

/// Resource bounds of a subprocess tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock timeout; the whole process tree is killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Address space (RLIMIT_AS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// CPU time (RLIMIT_CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<u64>,
    /// Processes and threads in the tool's tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_processes: Option<u64>,
    /// Captured stdout and stderr, each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_bytes: Option<u64>,
    /// Largest file the tool may write (RLIMIT_FSIZE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_file_bytes: Option<u64>,
    /// Open file descriptors (RLIMIT_NOFILE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_open_files: Option<u64>,
}

impl Limits {
    /// No limit is declared.
    pub fn is_unspecified(&self) -> bool {
        *self == Limits::default()
    }

    /// Each limit as `(name, value)`, in manifest order, for diffing and reports.
    pub fn entries(&self) -> [(&'static str, Option<u64>); 7] {
        [
            ("timeout_ms", self.timeout_ms),
            ("memory_bytes", self.memory_bytes),
            ("cpu_seconds", self.cpu_seconds),
            ("max_processes", self.max_processes),
            ("max_output_bytes", self.max_output_bytes),
            ("max_file_bytes", self.max_file_bytes),
            ("max_open_files", self.max_open_files),
        ]
    }
}

/// How stances are read: directly by [`StanceVisitor`] while [`read_directly`] runs (the first
/// pass over a manifest, whose errors are never shown), otherwise through serde's buffered
/// `untagged` reading, whose error positions and field paths the loaders report and the tests
/// pin. Both accept the same valid stances; anything the direct reading refuses is read again
/// the buffered way.
mod direct {
    use std::cell::Cell;

    thread_local! {
        static DIRECT: Cell<bool> = const { Cell::new(false) };
    }

    /// Runs `f` with stances read directly, restoring the previous mode afterwards (also when
    /// `f` panics).
    pub(crate) fn read_directly<T>(f: impl FnOnce() -> T) -> T {
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                DIRECT.with(|d| d.set(self.0));
            }
        }
        let _restore = Restore(DIRECT.with(|d| d.replace(true)));
        f()
    }

    pub(super) fn on() -> bool {
        DIRECT.with(Cell::get)
    }
}

pub(crate) use direct::read_directly;

/// A stance read directly: the word (`"deny"`, `"allow"`, anything else), or the list under
/// `key`.
enum Read<T> {
    Word(WordRead),
    List(Vec<T>),
}

/// The word of a stance read directly; other words are kept for the error.
enum WordRead {
    Deny,
    Allow,
    Other(String),
}

/// Reads a stance without buffering it: a string, or an object with exactly one key, `key`,
/// holding a list. Refuses everything else (the buffered reading then decides).
struct StanceVisitor<T> {
    key: &'static str,
    item: std::marker::PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for StanceVisitor<T> {
    type Value = Read<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"deny\", \"allow\" or {{\"{}\": [...]}}", self.key)
    }

    fn visit_str<E: serde::de::Error>(self, word: &str) -> Result<Read<T>, E> {
        Ok(Read::Word(match word {
            "deny" => WordRead::Deny,
            "allow" => WordRead::Allow,
            other => WordRead::Other(other.to_string()),
        }))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Read<T>, A::Error> {
        use serde::de::Error;
        let mut list = None;
        while let Some(is_key) = map.next_key_seed(KeyIs(self.key))? {
            if !is_key || list.is_some() {
                return Err(A::Error::custom("not a stance"));
            }
            list = Some(map.next_value::<Vec<T>>()?);
        }
        list.map(Read::List)
            .ok_or_else(|| A::Error::custom("not a stance"))
    }
}

/// Whether an object key is the given one, read without allocating.
struct KeyIs(&'static str);

impl<'de> serde::de::DeserializeSeed<'de> for KeyIs {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeyIs {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

/// A stance read directly (see [`direct`]).
fn read_direct<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    key: &'static str,
) -> Result<Read<T>, D::Error> {
    d.deserialize_any(StanceVisitor {
        key,
        item: std::marker::PhantomData,
    })
}

/// `"deny"`, `"allow"`, or an object with one list-valued key.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum StanceRepr<T> {
    Word(String),
    List(ListRepr<T>),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListRepr<T> {
    allow: Vec<T>,
}

#[derive(Serialize)]
#[serde(deny_unknown_fields)]
struct HostsRepr<'a> {
    hosts: &'a [HostPattern],
}

fn word_error<E: serde::de::Error>(what: &str, word: &str, list_key: &str) -> E {
    E::custom(format!(
        "invalid {what} `{word}`: expected \"deny\", \"allow\" or {{\"{list_key}\": [...]}}"
    ))
}

impl Serialize for NetPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            NetPolicy::Deny => s.serialize_str("deny"),
            NetPolicy::Allow => s.serialize_str("allow"),
            NetPolicy::Hosts(hosts) => HostsRepr { hosts }.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for NetPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if direct::on() {
            return match read_direct::<D, HostPattern>(d, "hosts")? {
                Read::Word(WordRead::Deny) => Ok(NetPolicy::Deny),
                Read::Word(WordRead::Allow) => Ok(NetPolicy::Allow),
                Read::Word(WordRead::Other(w)) => Err(word_error("net policy", &w, "hosts")),
                Read::List(hosts) => Ok(NetPolicy::Hosts(hosts)),
            };
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Word(String),
            Hosts(HostsIn),
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct HostsIn {
            hosts: Vec<HostPattern>,
        }
        match Repr::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "invalid net policy: expected \"deny\", \"allow\" or {\"hosts\": [\"host:port\", ...]}",
            )
        })? {
            Repr::Word(w) if w == "deny" => Ok(NetPolicy::Deny),
            Repr::Word(w) if w == "allow" => Ok(NetPolicy::Allow),
            Repr::Word(w) => Err(word_error("net policy", &w, "hosts")),
            Repr::Hosts(h) => Ok(NetPolicy::Hosts(h.hosts)),
        }
    }
}

fn list_from<T: FromStr<Err = String>, E: serde::de::Error>(items: &[String]) -> Result<Vec<T>, E> {
    items
        .iter()
        .map(|i| i.parse::<T>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(E::custom)
}

fn list_repr<T: fmt::Display>(items: &[T]) -> StanceRepr<String> {
    StanceRepr::List(ListRepr {
        allow: items.iter().map(|i| i.to_string()).collect(),
    })
}

impl Serialize for ExecPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ExecPolicy::Deny => s.serialize_str("deny"),
            ExecPolicy::Allow => s.serialize_str("allow"),
            ExecPolicy::AllowList(items) => list_repr(items).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ExecPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let invalid =
            "invalid exec policy: expected \"deny\", \"allow\" or {\"allow\": [\"program\", ...]}";
        if direct::on() {
            return match read_direct::<D, String>(d, "allow")? {
                Read::Word(WordRead::Deny) => Ok(ExecPolicy::Deny),
                Read::Word(WordRead::Allow) => Ok(ExecPolicy::Allow),
                Read::Word(WordRead::Other(w)) => Err(word_error("exec policy", &w, "allow")),
                Read::List(items) => list_from(&items).map(ExecPolicy::AllowList),
            };
        }
        match StanceRepr::<String>::deserialize(d).map_err(|_| serde::de::Error::custom(invalid))? {
            StanceRepr::Word(w) if w == "deny" => Ok(ExecPolicy::Deny),
            StanceRepr::Word(w) if w == "allow" => Ok(ExecPolicy::Allow),
            StanceRepr::Word(w) => Err(word_error("exec policy", &w, "allow")),
            StanceRepr::List(l) => list_from(&l.allow).map(ExecPolicy::AllowList),
        }
    }
}

impl Serialize for EnvPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            EnvPolicy::Deny => s.serialize_str("deny"),
            EnvPolicy::Allow(items) => list_repr(items).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for EnvPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let invalid = "invalid env policy: expected \"deny\" or {\"allow\": [\"NAME\", \"PREFIX_*\", ...]} (leave env out to inherit)";
        if direct::on() {
            return match read_direct::<D, String>(d, "allow")? {
                Read::Word(WordRead::Deny) => Ok(EnvPolicy::Deny),
                Read::Word(_) => Err(serde::de::Error::custom(invalid)),
                Read::List(items) => list_from(&items).map(EnvPolicy::Allow),
            };
        }
        match StanceRepr::<String>::deserialize(d).map_err(|_| serde::de::Error::custom(invalid))? {
            StanceRepr::Word(w) if w == "deny" => Ok(EnvPolicy::Deny),
            StanceRepr::Word(_) => Err(serde::de::Error::custom(invalid)),
            StanceRepr::List(l) => list_from(&l.allow).map(EnvPolicy::Allow),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(json: &str) -> ToolPolicy {
        let p: ToolPolicy = serde_json::from_str(json).unwrap();
        let back = serde_json::to_string(&p).unwrap();
        let again: ToolPolicy = serde_json::from_str(&back).unwrap();
        assert_eq!(p, again, "{json} -> {back}");
        p
    }

    #[test]
    fn unspecified_and_none_stay_apart() {
        let none = round_trip(r#"{"fs": {"read": []}}"#);
        assert_eq!(none.fs.read, Some(GlobList::empty()));
        assert_eq!(none.fs.write, None);
        assert!(none.gates_paths());
        let unspecified = round_trip("{}");
        assert_eq!(unspecified, ToolPolicy::default());
        assert!(!unspecified.gates_paths());
        assert_eq!(serde_json::to_string(&unspecified).unwrap(), "{}");
        assert_eq!(
            serde_json::to_string(&none).unwrap(),
            r#"{"fs":{"read":[]}}"#
        );
        let empty_env = round_trip(r#"{"env": {"allow": []}}"#);
        assert_eq!(empty_env.env, Some(EnvPolicy::Allow(vec![])));
        let empty_after = round_trip(r#"{"constraints": {"only_after": []}}"#);
        assert_eq!(empty_after.constraints.only_after, Some(vec![]));
    }

    #[test]
    fn every_stance_round_trips() {
        for json in [
            r#"{"net": "deny"}"#,
            r#"{"net": "allow"}"#,
            r#"{"net": {"hosts": ["api.example.com:443", "*.example.org:443", "127.0.0.1:8080", "[::1]:80", "h:*"]}}"#,
            r#"{"exec": "deny"}"#,
            r#"{"exec": "allow"}"#,
            r#"{"exec": {"allow": ["/usr/bin/rg", "git"]}}"#,
            r#"{"env": "deny"}"#,
            r#"{"env": {"allow": ["HOME", "AWS_*"]}}"#,
            r#"{"risk": "critical", "constraints": {"max_invocations": 3, "only_after": ["fetch"], "forbidden": false, "requires_approval": true}}"#,
            r#"{"limits": {"timeout_ms": 1, "memory_bytes": 2, "cpu_seconds": 3, "max_processes": 4, "max_output_bytes": 5, "max_file_bytes": 6, "max_open_files": 7}}"#,
        ] {
            let p = round_trip(json);
            let compact: serde_json::Value = serde_json::from_str(json).unwrap();
            assert_eq!(serde_json::to_value(&p).unwrap(), compact, "{json}");
        }
    }

    #[test]
    fn rejects_bad_values() {
        for (json, needle) in [
            (r#"{"net": "maybe"}"#, "net policy"),
            (r#"{"exec": {"allow": ["bin/sh"]}}"#, "bare name"),
            (r#"{"env": "allow"}"#, "env policy"),
            (r#"{"env": {"allow": ["A-B"]}}"#, "environment variable"),
            (r#"{"fs": {"read": ["data/**"]}}"#, "absolute"),
            (r#"{"fs": {"exec": []}}"#, "unknown field"),
            (r#"{"risk": "extreme"}"#, "unknown risk"),
            (r#"{"bogus": 1}"#, "unknown field"),
            (r#"{"limits": {"timeout_ms": -1}}"#, "invalid value"),
        ] {
            let err = serde_json::from_str::<ToolPolicy>(json)
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{json}: {err}");
        }
    }
}
