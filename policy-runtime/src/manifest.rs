//! The JSON manifest and single-tool TOML policies of [the reference](crate::reference::manifest).
//!
//! Output is deterministic: keys sorted, two-space indentation, a trailing newline, so that a
//! committed manifest diffs cleanly. Input is strict: unknown keys, duplicate tool names and
//! unsupported versions are errors (top-level keys starting with `x-` are kept as extensions).
//!
//! ```
//! use policy_runtime::manifest::Manifest;
//!
//! let text = r#"{
//!   "manifest_version": 1,
//!   "tools": { "write_report": { "fs": { "write": ["/out/**"] }, "net": "deny" } }
//! }"#;
//! let manifest = Manifest::from_json_str("tools.manifest.json", text)?;
//! let policy = &manifest.tools["write_report"].policy;
//! assert!(policy.fs.write.as_ref().unwrap().is_match("/out/a.txt"));
//! assert!(manifest.to_json().ends_with("}\n"));
//! assert_eq!(manifest.hash().len(), 64);
//! # Ok::<(), policy_runtime::error::LoadError>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::command::CommandPolicy;
use crate::error::LoadError;
use crate::objects::{map_only, MapOnly, Object};
use crate::policy::consistent_constraints;
use crate::policy::{
    Constraints, EnvPolicy, ExecPolicy, FsPolicy, Limits, NetPolicy, Risk, ToolPolicy,
};
use crate::role::Role;
use crate::tool::{PathArg, ToolSpec};

/// The manifest format version this build reads and writes.
pub const MANIFEST_VERSION: u32 = 1;

/// Where a tool is defined; metadata for diagnostics, never part of the meaning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceLocation {
    /// Path of the source file, relative to the workspace root.
    pub file: String,
    /// 1-based line.
    pub line: u32,
}

/// One tool of a manifest: its policy, its arguments' roles and where it is declared.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolEntry {
    /// The declared policy.
    pub policy: ToolPolicy,
    /// The role of each path or URL argument (`"args"`), part of the tool's meaning and hash.
    /// `None`: not recorded (a manifest written before roles, or a policy file), so every
    /// argument's role is unknown; `Some` of an empty map: the tool has no such argument.
    pub args: Option<BTreeMap<String, Role>>,
    /// Where the tool is defined.
    pub source: Option<SourceLocation>,
}

impl ToolEntry {
    /// The recorded role of argument `name`: `None` when it is unknown (roles not recorded)
    /// or when the tool records no path or URL argument of that name.
    pub fn role(&self, name: &str) -> Option<Role> {
        self.args.as_ref().and_then(|a| a.get(name).copied())
    }

    /// The typed path arguments the gate judges for this entry: one per recorded path role.
    pub fn path_args(&self) -> Vec<PathArg> {
        self.args
            .iter()
            .flatten()
            .filter_map(|(name, role)| {
                role.access().map(|access| PathArg {
                    name: name.clone(),
                    access,
                })
            })
            .collect()
    }

    /// Loads `tool`'s entry from a manifest, or a single-tool JSON or TOML policy (which records
    /// no roles), as [`ToolPolicy::load`] reads them. For a single-tool file, `tool` names its
    /// tool for the cross-field rules that need its name ([`crate::conflict`]).
    pub fn load(path: impl AsRef<Path>, tool: Option<&str>) -> Result<ToolEntry, LoadError> {
        let path = path.as_ref();
        let text = crate::error::read_file(path)?;
        let name = path.display().to_string();
        let is_toml = path.extension().is_some_and(|e| e == "toml");
        // A single-tool file carries no name: the caller's names the tool for the cross-field
        // rules that need it (a manifest's entries were checked when it loaded).
        let single = |policy: ToolPolicy| match tool
            .and_then(|t| policy.conflicts(Some(t)).into_iter().next().map(|c| (t, c)))
        {
            Some((t, conflict)) => Err(LoadError::plain(&name, conflict.in_tool(t))),
            None => Ok(policy),
        };
        let policy = match (is_toml, tool) {
            (true, _) => single(ToolPolicy::from_toml_str(&name, &text)?)?,
            (false, Some(tool)) if is_manifest_json(&text) => {
                let mut manifest = Manifest::from_json_str(&name, &text)?;
                return manifest
                    .tools
                    .remove(tool)
                    .ok_or_else(|| LoadError::missing_tool(&name, tool, manifest.tools.keys()));
            }
            (false, _) => single(ToolPolicy::from_json_str(&name, &text)?)?,
        };
        Ok(ToolEntry {
            policy,
            args: None,
            source: None,
        })
    }
}

/// A whole manifest: every tool of an agent, keyed by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Tools keyed by name (sorted).
    pub tools: BTreeMap<String, ToolEntry>,
    /// Top-level `x-*` extension keys, kept verbatim.
    pub extensions: BTreeMap<String, Value>,
}

// The entry repeats the policy's fields instead of `#[serde(flatten)]`-ing it: flatten buffers
// the object, which would strip line and column from every error inside a tool.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryRepr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    risk: Option<Risk>,
    #[serde(
        default,
        skip_serializing_if = "FsPolicy::is_unspecified",
        deserialize_with = "map_only"
    )]
    fs: FsPolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    net: Option<NetPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exec: Option<ExecPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    commands: Option<CommandPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    env: Option<EnvPolicy>,
    #[serde(
        default,
        skip_serializing_if = "Constraints::is_unspecified",
        deserialize_with = "consistent_constraints"
    )]
    constraints: Constraints,
    #[serde(
        default,
        skip_serializing_if = "Limits::is_unspecified",
        deserialize_with = "map_only"
    )]
    limits: Limits,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    args: Option<BTreeMap<String, Role>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_source"
    )]
    source: Option<SourceLocation>,
}

impl Object for EntryRepr {
    const EXPECTED: &'static str =
        "a tool object (with `risk`, `fs`, `net`, `exec`, `commands`, `env`, `constraints`, `limits`, `args`, `source`)";
}

impl Object for SourceLocation {
    const EXPECTED: &'static str = "a `source` object with `file` and `line`";
}

fn optional_source<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SourceLocation>, D::Error> {
    map_only(d).map(Some)
}

impl Serialize for ToolEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.policy.clone();
        EntryRepr {
            risk: p.risk,
            fs: p.fs,
            net: p.net,
            exec: p.exec,
            commands: p.commands,
            env: p.env,
            constraints: p.constraints,
            limits: p.limits,
            args: self.args.clone(),
            source: self.source.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r: EntryRepr = map_only(d)?;
        Ok(ToolEntry {
            policy: ToolPolicy {
                risk: r.risk,
                fs: r.fs,
                net: r.net,
                exec: r.exec,
                commands: r.commands,
                env: r.env,
                constraints: r.constraints,
                limits: r.limits,
            },
            args: r.args,
            source: r.source,
        })
    }
}

impl Serialize for Manifest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(2 + self.extensions.len()))?;
        map.serialize_entry("manifest_version", &MANIFEST_VERSION)?;
        map.serialize_entry("tools", &self.tools)?;
        for (k, v) in &self.extensions {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A map that rejects duplicate keys instead of keeping the last one, and values that do not
/// hold under their key.
struct StrictMap<V>(BTreeMap<String, V>);

/// A value whose validity depends on the key it is stored under.
trait CheckNamed {
    /// `Err` with the message when the value does not hold under `name`.
    fn check_named(&self, name: &str) -> Result<(), String>;
}

impl CheckNamed for ToolEntry {
    /// The cross-field rules that need the tool's name ([`crate::conflict`]; the others are
    /// checked with the constraints).
    fn check_named(&self, name: &str) -> Result<(), String> {
        match self.policy.conflicts(Some(name)).first() {
            Some(conflict) => Err(conflict.in_tool(name)),
            None => Ok(()),
        }
    }
}

impl<'de, V: Deserialize<'de> + CheckNamed> Deserialize<'de> for StrictMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V2<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de> + CheckNamed> Visitor<'de> for V2<V> {
            type Value = StrictMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of tools keyed by name")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                // Written manifests list their tools sorted: entries in order are collected
                // without a lookup each and built into the map in one pass; the names seen
                // are only kept in a set once a key comes out of order.
                let mut out: Vec<(String, V)> = Vec::new();
                let mut seen: Option<std::collections::HashSet<String>> = None;
                while let Some(key) = map.next_key::<String>()? {
                    if let Err(e) = crate::tool::check_tool_name(&key) {
                        // Backticks let the error's span find the key; escaped, a control character is
                        // named rather than echoed.
                        return Err(serde::de::Error::custom(format!(
                            "tool `{}`: {e}",
                            key.escape_debug()
                        )));
                    }
                    let in_order = seen.is_none() && out.last().is_none_or(|(last, _)| *last < key);
                    if !in_order {
                        let seen = seen
                            .get_or_insert_with(|| out.iter().map(|(k, _)| k.clone()).collect());
                        if !seen.insert(key.clone()) {
                            return Err(serde::de::Error::custom(format!(
                                "duplicate tool `{key}`: each tool name may appear once"
                            )));
                        }
                    }
                    let value: V = map.next_value()?;
                    if let Err(e) = value.check_named(&key) {
                        return Err(serde::de::Error::custom(e));
                    }
                    out.push((key, value));
                }
                Ok(StrictMap(out.into_iter().collect()))
            }
        }
        d.deserialize_map(V2(std::marker::PhantomData))
    }
}

impl<'de> Deserialize<'de> for Manifest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ManifestVisitor;
        impl<'de> Visitor<'de> for ManifestVisitor {
            type Value = Manifest;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a manifest object with `manifest_version` and `tools`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Manifest, A::Error> {
                use serde::de::Error;
                let mut version = None;
                let mut tools = None;
                let mut extensions = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "manifest_version" if version.is_none() => {
                            let v: u32 = map.next_value()?;
                            if v != MANIFEST_VERSION {
                                return Err(A::Error::custom(format!(
                                    "unsupported manifest_version {v}: this build reads version {MANIFEST_VERSION}"
                                )));
                            }
                            version = Some(v);
                        }
                        "tools" if tools.is_none() => {
                            tools = Some(map.next_value::<StrictMap<ToolEntry>>()?.0)
                        }
                        "manifest_version" | "tools" => {
                            return Err(A::Error::custom(format!("duplicate field `{key}`")))
                        }
                        k if k.starts_with("x-") => {
                            extensions.insert(key, map.next_value()?);
                        }
                        _ => {
                            return Err(A::Error::custom(format!(
                                "unknown field `{key}`, expected `manifest_version`, `tools` or an `x-` extension"
                            )))
                        }
                    }
                }
                version.ok_or_else(|| A::Error::missing_field("manifest_version"))?;
                let tools = tools.ok_or_else(|| A::Error::missing_field("tools"))?;
                Ok(Manifest { tools, extensions })
            }
        }
        d.deserialize_map(ManifestVisitor)
    }
}

impl Manifest {
    /// An empty manifest.
    pub fn new() -> Manifest {
        Manifest::default()
    }

    /// Parses manifest JSON; `name` is used in diagnostics (usually the file path).
    pub fn from_json_str(name: &str, text: &str) -> Result<Manifest, LoadError> {
        from_json(name, text)
    }

    /// Reads and parses a manifest file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Manifest, LoadError> {
        let path = path.as_ref();
        let text = crate::error::read_file(path)?;
        Manifest::from_json_str(&path.display().to_string(), &text)
    }

    /// The deterministic JSON text: sorted keys, two-space indentation, trailing newline.
    pub fn to_json(&self) -> String {
        let value = serde_json::to_value(self).expect("a manifest always serializes");
        let mut text = serde_json::to_string_pretty(&sorted(value)).expect("values serialize");
        text.push('\n');
        text
    }

    /// Writes [`Manifest::to_json`] atomically (a temporary file renamed over the target), so a
    /// reader never sees a half-written manifest.
    pub fn write_to(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        crate::error::write_atomic(path.as_ref(), self.to_json().as_bytes())
    }

    /// The canonical hash: SHA-256 (hex) of the compact, key-sorted JSON of the tools' meaning
    /// (policy and argument roles), without `source` locations or `x-` extensions, so moving a
    /// function does not change it. An entry without recorded roles hashes as it did before
    /// roles existed.
    pub fn hash(&self) -> String {
        let meaning: BTreeMap<&String, Value> = self
            .tools
            .iter()
            .map(|(k, v)| {
                let mut value = serde_json::to_value(&v.policy).expect("policies serialize");
                if let (Some(args), Value::Object(map)) = (&v.args, &mut value) {
                    map.insert(
                        "args".to_string(),
                        serde_json::to_value(args).expect("roles serialize"),
                    );
                }
                (k, value)
            })
            .collect();
        canonical_hash(&serde_json::json!({
            "manifest_version": MANIFEST_VERSION,
            "tools": meaning,
        }))
    }

    /// Adds or replaces one tool.
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        policy: ToolPolicy,
        source: Option<SourceLocation>,
    ) {
        self.tools.insert(
            name.into(),
            ToolEntry {
                policy,
                args: None,
                source,
            },
        );
    }

    /// Adds or replaces the tool of `spec`, with its policy, source and argument roles.
    pub fn insert_spec(&mut self, spec: &ToolSpec) {
        self.tools.insert(
            spec.name.clone(),
            ToolEntry {
                policy: spec.policy.clone(),
                args: Some(spec.arg_roles()),
                source: spec.source.clone(),
            },
        );
    }
}

impl ToolPolicy {
    /// Parses a single-tool TOML policy (the manifest's keys at top level).
    ///
    /// ```
    /// use policy_runtime::policy::ToolPolicy;
    /// let policy = ToolPolicy::from_toml_str("grep.toml", r#"
    /// net = "deny"
    /// exec = { allow = ["rg"] }
    /// [fs]
    /// read = ["/src/**"]
    /// "#)?;
    /// assert!(policy.fs.write.is_none());
    /// # Ok::<(), policy_runtime::error::LoadError>(())
    /// ```
    pub fn from_toml_str(name: &str, text: &str) -> Result<ToolPolicy, LoadError> {
        let de = toml::Deserializer::parse(text)
            .map_err(|e| LoadError::from_toml(name, text, &e, ""))?;
        serde_path_to_error::deserialize(de)
            .map(|MapOnly(policy)| policy)
            .map_err(|e| LoadError::from_toml(name, text, e.inner(), &e.path().to_string()))
    }

    /// Parses a single-tool policy from JSON.
    pub fn from_json_str(name: &str, text: &str) -> Result<ToolPolicy, LoadError> {
        from_json::<MapOnly<ToolPolicy>>(name, text).map(|MapOnly(policy)| policy)
    }

    /// Serializes the policy as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a policy always serializes to TOML")
    }

    /// SHA-256 (hex) of the policy's canonical JSON.
    pub fn hash(&self) -> String {
        canonical_hash(&serde_json::to_value(self).expect("policies serialize"))
    }

    /// Loads `tool`'s policy from a manifest (a JSON object with a `tools` key), a single-tool
    /// JSON policy (any other JSON object) or a single-tool TOML file (`.toml`). `tool` picks
    /// the entry of a manifest, and names a single-tool file's tool for the cross-field rules
    /// that need its name ([`crate::conflict`]).
    pub fn load(path: impl AsRef<Path>, tool: Option<&str>) -> Result<ToolPolicy, LoadError> {
        ToolEntry::load(path, tool).map(|entry| entry.policy)
    }
}

/// Parses a whole JSON document; errors name the file, line, column and the field's path.
///
/// A valid document is read once, without tracking field paths and with stances read
/// directly (not buffered); only a document that fails is read again with paths and the
/// buffered reading, for the error.
fn from_json<'de, T: Deserialize<'de>>(name: &str, text: &'de str) -> Result<T, LoadError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let first = crate::policy::read_directly(|| T::deserialize(&mut de));
    if let Ok(value) = first {
        if de.end().is_ok() {
            return Ok(value);
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| LoadError::from_json(name, text, e.inner(), &e.path().to_string()))?;
    de.end()
        .map_err(|e| LoadError::from_json(name, text, &e, ""))?;
    Ok(value)
}

/// Whether JSON text is a manifest rather than a single-tool policy: an object with `tools`.
/// Text that is not a JSON object is read as a manifest, whose loader names the problem.
fn is_manifest_json(text: &str) -> bool {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => map.contains_key("tools"),
        _ => true,
    }
}

fn canonical_hash(value: &Value) -> String {
    let text = serde_json::to_string(&sorted(value.clone())).expect("values serialize");
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Rebuilds every object with its keys inserted in sorted order, which sorts the output whether
/// or not serde_json's `preserve_order` feature is enabled somewhere in the build.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let entries: BTreeMap<String, Value> =
                map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(entries.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{
  "manifest_version": 1,
  "tools": {
    "write_report": {
      "risk": "medium",
      "fs": { "write": ["/out/**"] },
      "net": "deny",
      "exec": "allow",
      "constraints": { "max_invocations": 3, "only_after": ["fetch"] },
      "source": { "file": "examples/src/tools.rs", "line": 12 }
    },
    "fetch": { "net": { "hosts": ["api.example.com:443"] } }
  },
  "x-generator": "test"
}"#;

    #[test]
    fn round_trips_deterministically() {
        let m = Manifest::from_json_str("m.json", SAMPLE).unwrap();
        let text = m.to_json();
        let again = Manifest::from_json_str("m.json", &text).unwrap();
        assert_eq!(m, again);
        assert_eq!(text, again.to_json());
        assert!(text.find("\"fetch\"").unwrap() < text.find("\"write_report\"").unwrap());
        assert!(text.find("\"constraints\"").unwrap() < text.find("\"exec\"").unwrap());
        assert_eq!(m.extensions["x-generator"], "test");
    }

    #[test]
    fn hash_ignores_source_and_order() {
        let a = Manifest::from_json_str("a", SAMPLE).unwrap();
        let mut b = a.clone();
        b.tools.get_mut("write_report").unwrap().source = None;
        assert_eq!(a.hash(), b.hash());
        b.tools.get_mut("write_report").unwrap().policy.net = Some(NetPolicy::Allow);
        assert_ne!(a.hash(), b.hash());
    }

    #[test]
    fn roles_are_meaning_and_old_entries_load() {
        let old = Manifest::from_json_str("a", SAMPLE).unwrap();
        assert_eq!(old.tools["write_report"].args, None);
        assert_eq!(old.tools["write_report"].role("dest"), None);
        let text = SAMPLE.replace(
            r#""net": "deny","#,
            r#""net": "deny", "args": {"dest": "write", "src": "read", "u": "url", "p": "any"},"#,
        );
        let with = Manifest::from_json_str("a", &text).unwrap();
        let entry = &with.tools["write_report"];
        assert_eq!(entry.role("dest"), Some(Role::Write));
        assert_eq!(entry.role("u"), Some(Role::Url));
        assert_eq!(entry.path_args().len(), 3);
        assert_ne!(old.hash(), with.hash());
        let mut read = with.clone();
        read.tools
            .get_mut("write_report")
            .unwrap()
            .args
            .as_mut()
            .unwrap()
            .insert("dest".into(), Role::Read);
        assert_ne!(read.hash(), with.hash(), "a role is part of the hash");
        assert_eq!(Manifest::from_json_str("a", &with.to_json()).unwrap(), with);
        // Recorded but empty stays apart from not recorded.
        let mut empty = old.clone();
        empty.tools.get_mut("fetch").unwrap().args = Some(BTreeMap::new());
        assert_ne!(empty.hash(), old.hash());
        assert_eq!(
            Manifest::from_json_str("a", &empty.to_json()).unwrap(),
            empty
        );
        let err = Manifest::from_json_str(
            "a",
            &SAMPLE.replace(r#""net": "deny","#, r#""args": {"d": "reed"},"#),
        )
        .unwrap_err();
        assert!(err.to_string().contains("reed"), "{err}");
    }

    #[test]
    fn strictness() {
        for (text, needle) in [
            (
                r#"{"manifest_version": 2, "tools": {}}"#,
                "unsupported manifest_version 2",
            ),
            (r#"{"tools": {}}"#, "missing field `manifest_version`"),
            (r#"{"manifest_version": 1}"#, "missing field `tools`"),
            (
                r#"{"manifest_version": 1, "tools": {}, "extra": 1}"#,
                "unknown field `extra`",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"a": {}, "a": {}}}"#,
                "duplicate tool `a`",
            ),
            // Out of order, the names seen are checked another way: still refused.
            (
                r#"{"manifest_version": 1, "tools": {"b": {}, "a": {}, "c": {}, "a": {}}}"#,
                "duplicate tool `a`",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"a": {}, "c": {}, "b": {}, "c": {}}}"#,
                "duplicate tool `c`",
            ),
            (
                r#"{"manifest_version": 1, "tools": {"a": {"nett": "deny"}}}"#,
                "unknown field `nett`",
            ),
        ] {
            let err = Manifest::from_json_str("m.json", text).unwrap_err();
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
    }

    /// Tools listed out of order load as the same manifest as sorted ones.
    #[test]
    fn tool_order_does_not_matter() {
        let sorted = Manifest::from_json_str(
            "m.json",
            r#"{"manifest_version": 1, "tools": {"a": {}, "b": {"net": "deny"}, "c": {}}}"#,
        )
        .unwrap();
        let shuffled = Manifest::from_json_str(
            "m.json",
            r#"{"manifest_version": 1, "tools": {"c": {}, "a": {}, "b": {"net": "deny"}}}"#,
        )
        .unwrap();
        assert_eq!(sorted, shuffled);
        assert_eq!(sorted.tools.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    }

    /// A manifest's stances are read directly on the first pass (see `policy::direct`); every
    /// form reads as it does through the buffered reading, and each error is the buffered
    /// reading's, at the same place.
    #[test]
    fn stances_read_directly_as_through_the_buffered_reading() {
        let valid = [
            r#""deny""#,
            r#""allow""#,
            r#"{"allow": ["git", "/bin/sh"]}"#,
            r#"{"allow": []}"#,
            r#"[["git"]]"#,
        ];
        let parts = valid.iter().map(|s| ("exec", *s)).chain([
            ("net", r#""deny""#),
            ("net", r#""allow""#),
            ("net", r#"{"hosts": ["api.example.com:443"]}"#),
            ("env", r#""deny""#),
            ("env", r#"{"allow": ["HOME", "LC_*"]}"#),
        ]);
        for (part, stance) in parts {
            let policy = format!(r#"{{"{part}": {stance}}}"#);
            let buffered: ToolPolicy = serde_json::from_str(&policy).unwrap();
            let direct =
                crate::policy::read_directly(|| serde_json::from_str::<ToolPolicy>(&policy));
            match direct {
                Ok(direct) => assert_eq!(direct, buffered, "{part}: {stance}"),
                // The list-as-array form is left to the buffered reading.
                Err(_) => assert_eq!(stance, r#"[["git"]]"#),
            }
            let text = format!(r#"{{"manifest_version": 1, "tools": {{"t": {policy}}}}}"#);
            let loaded = Manifest::from_json_str("m.json", &text).unwrap();
            assert_eq!(loaded.tools["t"].policy, buffered, "{part}: {stance}");
        }
        for (part, stance) in [
            ("exec", r#""sometimes""#),
            ("exec", r#"{"allow": ["git"], "deny": []}"#),
            ("exec", r#"{"allow": ["git"], "allow": ["sh"]}"#),
            ("exec", r#"{}"#),
            ("exec", r#"{"allow": [1]}"#),
            ("net", r#"{"hosts": ["no port"]}"#),
            ("net", r#""hosts""#),
            ("env", r#""allow""#),
            ("env", "\n  {\"allow\": [\"A\"],\n   \"x\": 1}\n"),
        ] {
            let text = format!(
                "{{\"manifest_version\": 1, \"tools\": {{\"t\": {{\"{part}\": {stance}}}}}}}"
            );
            let err = Manifest::from_json_str("m.json", &text).unwrap_err();
            let buffered = {
                let mut de = serde_json::Deserializer::from_str(&text);
                serde_path_to_error::deserialize::<_, Manifest>(&mut de).unwrap_err()
            };
            let expected = LoadError::from_json(
                "m.json",
                &text,
                buffered.inner(),
                &buffered.path().to_string(),
            );
            assert_eq!(err.to_string(), expected.to_string(), "{part}: {stance}");
        }
    }

    #[test]
    fn toml_round_trip() {
        let p = ToolPolicy::from_toml_str(
            "p.toml",
            r#"
risk = "high"
net = { hosts = ["api.example.com:443"] }
env = "deny"
[fs]
read = []
write = ["/out/**"]
[constraints]
max_invocations = 2
[limits]
timeout_ms = 5000
"#,
        )
        .unwrap();
        assert_eq!(p.fs.read.as_ref().map(|r| r.is_empty()), Some(true));
        let again = ToolPolicy::from_toml_str("p.toml", &p.to_toml()).unwrap();
        assert_eq!(p, again);
        let err = ToolPolicy::from_toml_str("p.toml", "[fs]\nread = [\"rel/**\"]\n").unwrap_err();
        assert!(err.to_string().contains("absolute"), "{err}");
    }
}
