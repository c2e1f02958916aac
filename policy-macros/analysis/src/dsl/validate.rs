//! Gives the parsed attribute its meaning: builds the runtime's own [`ToolPolicy`] at compile
//! time and reports every mistake at the span where it was written, with what to write instead.
//!
//! Errors are collected rather than returned at the first one, so a user fixing a policy sees
//! all of its problems in one build.

use std::collections::HashMap;

use policy_runtime::command::{CommandPolicy, Level};
use policy_runtime::conflict::Conflict;
use policy_runtime::glob::{Glob, GlobError, GlobList};
use policy_runtime::host::HostPattern;
use policy_runtime::os_grant::OsGrant;
use policy_runtime::policy::{
    Constraints, EnvPattern, EnvPolicy, ExecPolicy, Limits, NetPolicy, ProgramName, Risk,
    ToolPolicy,
};
use policy_runtime::tool::Access;
use proc_macro2::Span;
use syn::LitStr;

use super::ast::{Attr, Entry, Key, Value};
use super::suggest;

const TOP_KEYS: &[&str] = &[
    "policy",
    "commands",
    "constraints",
    "limits",
    "paths",
    "name",
    "description",
];
const POLICY_KEYS: &[&str] = &["fs.read", "fs.write", "net", "exec", "env", "risk"];
const CONSTRAINT_KEYS: &[&str] = &[
    "max_invocations",
    "only_after",
    "forbidden",
    "requires_approval",
];
const COMMAND_KEYS: &[&str] = &["max_level", "deny_args", "chains", "approve_from"];
const LIMIT_KEYS: &[&str] = &[
    "timeout_ms",
    "memory_bytes",
    "cpu_seconds",
    "max_processes",
    "max_output_bytes",
    "max_file_bytes",
    "max_open_files",
];

/// A group of `key = value` settings: how it is named in messages, its keys, and the hint for a
/// known key written another way (`key(...)` or a bare `key`).
struct Group {
    place: &'static str,
    keys: &'static [&'static str],
    shape: fn(&str) -> String,
}

/// The hint of most groups: the key's example.
fn write_example(key: &str) -> String {
    format!("write `{key} = ...`, e.g. {}", example(key))
}

const POLICY: Group = Group {
    place: "`policy(...)`",
    keys: POLICY_KEYS,
    shape: write_example,
};
const CONSTRAINTS: Group = Group {
    place: "`constraints(...)`",
    keys: CONSTRAINT_KEYS,
    shape: write_example,
};
const LIMITS: Group = Group {
    place: "`limits(...)`",
    keys: LIMIT_KEYS,
    shape: |key| format!("write `{key} = <number>`"),
};
const COMMANDS: Group = Group {
    place: "`commands(...)`",
    keys: COMMAND_KEYS,
    shape: |key| match key {
        "deny_args" => DENY_ARGS_IS_A_GROUP.to_string(),
        _ => write_example(key),
    },
};
const DENY_ARGS_IS_A_GROUP: &str =
    "`deny_args` is a group: write `deny_args(git = [\"-c\", \"--upload-pack\"])`";

/// A glob the OS sandbox can only enforce as a wider directory tree.
#[derive(Debug)]
pub struct Widening {
    /// Where the glob is written.
    pub span: Span,
    /// The warning text.
    pub message: String,
}

/// The meaning of a valid attribute.
#[derive(Debug)]
pub struct Checked {
    /// The policy, as the runtime will see it.
    pub policy: ToolPolicy,
    /// `name = "..."`, overriding the function's name.
    pub name: Option<String>,
    /// `description = "..."`, overriding the doc comment.
    pub description: Option<String>,
    /// Globs that the sandbox widens.
    pub widenings: Vec<Widening>,
    /// `paths(dest = write, src = read)`: arguments declared as paths, for parameters whose
    /// type does not say it (a `String`, or a field of rmcp's `Parameters<T>`).
    pub paths: Vec<(String, Access, Span)>,
}

/// `deny` or `allow`, the word forms `net` and `exec` share.
enum Stance {
    Deny,
    Allow,
}

/// Collects errors so that every mistake is reported in one build.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    fn at(&mut self, place: impl Place, message: impl std::fmt::Display) {
        self.push(place.error(message));
    }
}

/// Where an error points: one token's span, or a whole dotted key (`fs.raed` underlined from
/// `fs` to `raed`, which a single `Span` cannot do on stable Rust).
trait Place {
    fn error(self, message: impl std::fmt::Display) -> syn::Error;
}

impl Place for Span {
    fn error(self, message: impl std::fmt::Display) -> syn::Error {
        syn::Error::new(self, message)
    }
}

impl Place for &Key {
    fn error(self, message: impl std::fmt::Display) -> syn::Error {
        Key::error(self, message)
    }
}

/// Remembers where each key was first set, to report duplicates at the second one.
#[derive(Default)]
struct Seen(HashMap<String, Span>);

impl Seen {
    /// `false` (and an error) if `key` was already set.
    fn first(&mut self, key: &Key, errors: &mut Errors) -> bool {
        let text = key.text();
        if let Some(first) = self.0.get(&text) {
            let mut e = key.error(format!(
                "`{text}` is set twice; keep one of them (a policy key may appear once)"
            ));
            e.combine(syn::Error::new(
                *first,
                format!("`{text}` is first set here"),
            ));
            errors.push(e);
            return false;
        }
        self.0.insert(text, key.span());
        true
    }
}

/// Validates the attribute of the tool `tool_name` (used to catch `only_after` on itself).
pub fn validate(attr: &Attr, tool_name: &str) -> syn::Result<Checked> {
    let mut v = Validator {
        errors: Errors::default(),
        policy: ToolPolicy::default(),
        name: None,
        description: None,
        widenings: Vec::new(),
        paths: Vec::new(),
        forbidden_span: None,
        constraint_spans: Vec::new(),
        only_after: Vec::new(),
    };
    v.top(&attr.entries);
    v.contradictions(tool_name);
    match v.errors.0 {
        Some(e) => Err(e),
        None => Ok(Checked {
            policy: v.policy,
            name: v.name,
            description: v.description,
            widenings: v.widenings,
            paths: v.paths,
        }),
    }
}

struct Validator {
    errors: Errors,
    policy: ToolPolicy,
    name: Option<String>,
    description: Option<String>,
    widenings: Vec<Widening>,
    paths: Vec<(String, Access, Span)>,
    forbidden_span: Option<Span>,
    /// Constraints that mean nothing on a forbidden tool, with where they are set.
    constraint_spans: Vec<(String, Span)>,
    /// `only_after` names with their spans, for the self-reference check.
    only_after: Vec<(String, Span)>,
}

impl Validator {
    fn top(&mut self, entries: &[Entry]) {
        let mut seen = Seen::default();
        for entry in entries {
            let key = entry.key();
            let text = key.text();
            let well_formed = matches!(
                (text.as_str(), entry),
                (
                    "policy" | "commands" | "constraints" | "limits" | "paths",
                    Entry::Group { .. }
                ) | ("name" | "description", Entry::Assign { .. })
            );
            if well_formed && !seen.first(key, &mut self.errors) {
                continue;
            }
            match (text.as_str(), entry) {
                ("policy", Entry::Group { entries, .. }) => self.policy_group(entries),
                ("constraints", Entry::Group { entries, .. }) => self.constraints_group(entries),
                ("commands", Entry::Group { entries, .. }) => {
                    self.commands_group(key, entries)
                }
                ("limits", Entry::Group { entries, .. }) => self.limits_group(entries),
                ("paths", Entry::Group { entries, .. }) => self.paths_group(entries),
                ("name", Entry::Assign { value, .. }) => {
                    self.name = self.tool_name(value, "name");
                }
                ("description", Entry::Assign { value, .. }) => match value {
                    Value::Str(s) => self.description = Some(s.value()),
                    other => self.errors.at(
                        other.span(),
                        format!(
                            "`description` takes a string, found {}: write `description = \"What the tool does.\"`",
                            other.describe()
                        ),
                    ),
                },
                ("policy" | "commands" | "constraints" | "limits" | "paths", _) => self.errors.at(
                    key,
                    format!(
                        "`{text}` is a group: write `{text}(...)`, e.g. {}",
                        example(&text)
                    ),
                ),
                ("name" | "description", _) => self
                    .errors
                    .at(key, format!("write `{text} = \"...\"`")),
                _ => self
                    .errors
                    .at(key, misplaced(&text, "the attribute", TOP_KEYS)),
            }
        }
    }

    fn policy_group(&mut self, entries: &[Entry]) {
        let mut seen = Seen::default();
        let mut flat = Vec::new();
        for entry in entries {
            // `fs(read = ..., write = ...)` is the same as `fs.read = ..., fs.write = ...`.
            if let Entry::Group {
                key,
                entries: inner,
                ..
            } = entry
            {
                if key.text() == "fs" {
                    for e in inner {
                        if let Entry::Assign { key: k, value } = e {
                            let mut parts = key.parts.clone();
                            parts.extend(k.parts.iter().cloned());
                            flat.push(Entry::Assign {
                                key: Key { parts },
                                value: value.clone(),
                            });
                        } else {
                            flat.push(e.clone());
                        }
                    }
                    continue;
                }
            }
            flat.push(entry.clone());
        }
        for entry in &flat {
            let Some((text, value)) = self.setting(entry, &mut seen, &POLICY) else {
                continue;
            };
            match text.as_str() {
                "fs.read" => self.policy.fs.read = self.globs(value, &text),
                "fs.write" => self.policy.fs.write = self.globs(value, &text),
                "net" => self.policy.net = self.net(value),
                "exec" => self.policy.exec = self.exec(value),
                "env" => self.policy.env = self.env(value),
                "risk" => self.policy.risk = self.risk(value),
                _ => unreachable!("checked against POLICY_KEYS"),
            }
        }
    }

    fn paths_group(&mut self, entries: &[Entry]) {
        let mut seen = Seen::default();
        for entry in entries {
            let key = entry.key();
            let text = key.text();
            let access = match entry {
                Entry::Assign {
                    value: Value::Word(w),
                    ..
                } if w == "read" => Access::Read,
                Entry::Assign {
                    value: Value::Word(w),
                    ..
                } if w == "write" => Access::Write,
                Entry::Assign { value, .. } => {
                    self.errors.at(
                        value.span(),
                        format!("a path argument is `read` or `write`, found {}: write `paths({text} = write)`", value.describe()),
                    );
                    continue;
                }
                _ => {
                    self.errors.at(
                        key,
                        format!("write `paths({text} = read)` or `paths({text} = write)`"),
                    );
                    continue;
                }
            };
            if key.parts.len() != 1 {
                self.errors
                    .at(key, "name a top-level argument: `paths(dest = write)`");
                continue;
            }
            if seen.first(key, &mut self.errors) {
                self.paths.push((text, access, key.span()));
            }
        }
    }

    fn constraints_group(&mut self, entries: &[Entry]) {
        let mut seen = Seen::default();
        let mut c = Constraints::default();
        for entry in entries {
            let key = entry.key();
            let Some((text, value)) = self.setting(entry, &mut seen, &CONSTRAINTS) else {
                continue;
            };
            match text.as_str() {
                "max_invocations" => {
                    if let Some(n) = self.number::<u32>(value, &text) {
                        if n == 0 {
                            self.errors.at(
                                value.span(),
                                "`max_invocations = 0` means the tool can never run: write `forbidden = true` instead",
                            );
                        }
                        c.max_invocations = Some(n);
                        self.constraint_spans.push((text.clone(), key.span()));
                    }
                }
                "only_after" => {
                    if let Some(names) = self.tool_names(value) {
                        c.only_after = Some(names.iter().map(|(n, _)| n.clone()).collect());
                        if !names.is_empty() {
                            self.constraint_spans.push((text.clone(), key.span()));
                        }
                        self.only_after = names;
                    }
                }
                "forbidden" => {
                    c.forbidden = self.boolean(value, &text);
                    if c.forbidden == Some(true) {
                        self.forbidden_span = Some(value.span());
                    }
                }
                "requires_approval" => {
                    c.requires_approval = self.boolean(value, &text);
                    if c.requires_approval == Some(true) {
                        self.constraint_spans.push((text.clone(), key.span()));
                    }
                }
                _ => unreachable!("checked against CONSTRAINT_KEYS"),
            }
        }
        self.policy.constraints = c;
    }

    /// `commands(max_level = 2, deny_args(git = ["-c"]), chains = true, approve_from = 2)`:
    /// the command policy, checked by the runtime's own [`CommandPolicy::build`].
    fn commands_group(&mut self, group: &Key, entries: &[Entry]) {
        let mut seen = Seen::default();
        let mut max_level = None;
        let mut deny_args = Vec::new();
        let mut chains = None;
        let mut approve_from = None;
        for entry in entries {
            let key = entry.key();
            if let Entry::Group { entries: rules, .. } = entry {
                if key.text() == "deny_args" {
                    if seen.first(key, &mut self.errors) {
                        self.deny_args(rules, &mut deny_args);
                    }
                    continue;
                }
            }
            let Some((text, value)) = self.setting(entry, &mut seen, &COMMANDS) else {
                continue;
            };
            match text.as_str() {
                "deny_args" => self.errors.at(key, DENY_ARGS_IS_A_GROUP),
                "max_level" => max_level = self.level(value, &text),
                "approve_from" => approve_from = self.level(value, &text),
                "chains" => chains = self.boolean(value, &text),
                _ => unreachable!("checked against COMMAND_KEYS"),
            }
        }

        let Some(max_level) = max_level else {
            if !seen.0.contains_key("max_level") {
                self.errors.at(
                    group,
                    "`commands(...)` needs `max_level`: write e.g. `commands(max_level = 2)` (0 read-only, 1 build or test, 2 writes within the project, 3 destructive, 4 privileged, 5 outbound network)",
                );
            }
            return;
        };
        match CommandPolicy::build(max_level, deny_args, chains, approve_from) {
            Ok(p) => self.policy.commands = Some(p),
            Err(e) => self.errors.at(group, format!("in `commands(...)`: {e}")),
        }
    }

    /// `deny_args(git = ["-c"], ...)`: each program's denied arguments, added to `rules`.
    fn deny_args(&mut self, entries: &[Entry], rules: &mut Vec<(String, Vec<String>)>) {
        for rule in entries {
            let program = rule.key();
            match rule {
                Entry::Assign { value, .. } => {
                    if let Some(args) = self.strings(value, "deny_args", "argument") {
                        rules.push((program.text(), args.iter().map(LitStr::value).collect()));
                    }
                }
                _ => self.errors.at(
                    program,
                    format!("write `{} = [\"--flag\", ...]`", program.text()),
                ),
            }
        }
    }

    /// The key and value of `entry` when it sets a key of `group` for the first time
    /// (`key = value`). Otherwise the mistake is reported, in this order, and `None`: a key
    /// unknown here (with where it belongs, or the nearest known key), a key already set, a
    /// known key written another way (with the group's hint).
    fn setting<'e>(
        &mut self,
        entry: &'e Entry,
        seen: &mut Seen,
        group: &Group,
    ) -> Option<(String, &'e Value)> {
        let key = entry.key();
        let text = key.text();
        if !group.keys.contains(&text.as_str()) {
            self.errors
                .at(key, misplaced(&text, group.place, group.keys));
            return None;
        }
        if !seen.first(key, &mut self.errors) {
            return None;
        }
        match entry {
            Entry::Assign { value, .. } => Some((text, value)),
            _ => {
                self.errors.at(key, (group.shape)(&text));
                None
            }
        }
    }

    /// A command level, 0 to 6.
    fn level(&mut self, value: &Value, key: &str) -> Option<Level> {
        let n = self.number::<u64>(value, key)?;
        let level = Level::from_number(n);
        if level.is_none() {
            self.errors.at(
                value.span(),
                format!("command level {n} does not exist: `{key}` takes 0 (read-only) to 5 (outbound network)"),
            );
        }
        level
    }

    fn limits_group(&mut self, entries: &[Entry]) {
        let mut seen = Seen::default();
        let mut l = Limits::default();
        for entry in entries {
            let Some((text, value)) = self.setting(entry, &mut seen, &LIMITS) else {
                continue;
            };
            let Some(n) = self.number::<u64>(value, &text) else {
                continue;
            };
            if n == 0 {
                self.errors.at(
                    value.span(),
                    format!("`{text} = 0` leaves the tool no room to run: give a positive value, or remove the limit"),
                );
                continue;
            }
            let slot = match text.as_str() {
                "timeout_ms" => &mut l.timeout_ms,
                "memory_bytes" => &mut l.memory_bytes,
                "cpu_seconds" => &mut l.cpu_seconds,
                "max_processes" => &mut l.max_processes,
                "max_output_bytes" => &mut l.max_output_bytes,
                "max_file_bytes" => &mut l.max_file_bytes,
                "max_open_files" => &mut l.max_open_files,
                _ => unreachable!("checked against LIMIT_KEYS"),
            };
            *slot = Some(n);
        }
        self.policy.limits = l;
    }

    /// A string or a list of strings; `none` is the empty list.
    /// Parses every literal with the runtime's own parser; each failure is reported at its
    /// literal (followed by `example`), and any failure makes the whole list `None`.
    fn parse_each<T>(&mut self, lits: &[LitStr], example: &str) -> Option<Vec<T>>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
    {
        let mut parsed = Vec::new();
        for lit in lits {
            match lit.value().parse::<T>() {
                Ok(v) => parsed.push(v),
                Err(e) => self.errors.at(lit.span(), format!("{e}{example}")),
            }
        }
        (parsed.len() == lits.len()).then_some(parsed)
    }

    fn strings(&mut self, value: &Value, key: &str, what: &str) -> Option<Vec<LitStr>> {
        match value {
            Value::Str(s) => Some(vec![s.clone()]),
            Value::Word(w) if w == "none" => Some(Vec::new()),
            Value::List(_, items) => {
                let mut out = Vec::new();
                let mut ok = true;
                for item in items {
                    match item {
                        Value::Str(s) => {
                            if out.iter().any(|o: &LitStr| o.value() == s.value()) {
                                self.errors.at(
                                    s.span(),
                                    format!(
                                        "{:?} is listed twice in `{key}`; remove one",
                                        s.value()
                                    ),
                                );
                                ok = false;
                            }
                            out.push(s.clone());
                        }
                        Value::Word(w) if w == "deny" || w == "allow" || w == "none" => {
                            self.errors.at(
                                w.span(),
                                format!(
                                    "`{w}` cannot be one item of a list: `{key}` is either `{w}` or a list of {what}s, not both; write `{key} = {w}` or remove it from the list"
                                ),
                            );
                            ok = false;
                        }
                        other => {
                            self.errors.at(
                                other.span(),
                                format!(
                                    "`{key}` lists {what}s as strings, found {}: write it in quotes, e.g. {}",
                                    other.describe(),
                                    example(key)
                                ),
                            );
                            ok = false;
                        }
                    }
                }
                ok.then_some(out)
            }
            other => {
                self.errors.at(
                    other.span(),
                    format!(
                        "`{key}` takes a {what} string, a list of them, or `none`; found {}: e.g. {}",
                        other.describe(),
                        example(key)
                    ),
                );
                None
            }
        }
    }

    fn globs(&mut self, value: &Value, key: &str) -> Option<GlobList> {
        let lits = self.strings(value, key, "glob")?;
        let mut globs = Vec::new();
        for lit in &lits {
            match Glob::new(&lit.value()) {
                Ok(glob) => {
                    // Compile time cannot know whether a literal path is a file on the machine
                    // the tool will run on: the probe answers "unknown".
                    let grant = OsGrant::of(&glob, |_| None);
                    if let Some(message) = widening_message(&glob, &grant) {
                        self.widenings.push(Widening {
                            span: lit.span(),
                            message,
                        });
                    }
                    globs.push(glob);
                }
                Err(e) => self.errors.push(glob_error(lit, &e)),
            }
        }
        (globs.len() == lits.len()).then(|| GlobList::from_globs(globs))
    }

    /// The word forms of `net` and `exec`: `Ok(Some(..))` for `deny`/`allow`, `Ok(None)` when
    /// the value is `none` or a list (parsed by the caller), `Err` once the error is reported.
    fn stance(
        &mut self,
        value: &Value,
        key: &str,
        list_example: &str,
    ) -> Result<Option<Stance>, ()> {
        match value {
            Value::Word(w) if w == "deny" => Ok(Some(Stance::Deny)),
            Value::Word(w) if w == "allow" => Ok(Some(Stance::Allow)),
            Value::Word(w) if w != "none" => {
                self.errors.at(
                    w.span(),
                    format!(
                        "unknown {key} stance `{w}`: write `{key} = deny`, `{key} = allow` or `{key} = {list_example}`{}",
                        hint(&w.to_string(), &["deny", "allow", "none"])
                    ),
                );
                Err(())
            }
            _ => Ok(None),
        }
    }

    fn net(&mut self, value: &Value) -> Option<NetPolicy> {
        match self.stance(value, "net", "[\"host:port\", ...]").ok()? {
            Some(Stance::Deny) => Some(NetPolicy::Deny),
            Some(Stance::Allow) => Some(NetPolicy::Allow),
            None => {
                let lits = self.strings(value, "net", "`host:port`")?;
                self.parse_each::<HostPattern>(
                    &lits,
                    "; e.g. \"api.example.com:443\", \"*.example.org:443\", \"127.0.0.1:8080\"",
                )
                .map(NetPolicy::Hosts)
            }
        }
    }

    fn exec(&mut self, value: &Value) -> Option<ExecPolicy> {
        match self
            .stance(value, "exec", "[\"rg\", \"/usr/bin/git\"]")
            .ok()?
        {
            Some(Stance::Deny) => Some(ExecPolicy::Deny),
            Some(Stance::Allow) => Some(ExecPolicy::Allow),
            None => {
                let lits = self.strings(value, "exec", "program")?;
                self.parse_each::<ProgramName>(&lits, "")
                    .map(ExecPolicy::AllowList)
            }
        }
    }

    fn env(&mut self, value: &Value) -> Option<EnvPolicy> {
        match value {
            Value::Word(w) if w == "deny" => return Some(EnvPolicy::Deny),
            Value::Word(w) if w == "allow" => {
                self.errors.at(
                    w.span(),
                    "`env = allow` is not a stance: leave `env` out to inherit the whole environment, or list what the tool may see, e.g. `env = [\"HOME\", \"AWS_*\"]`",
                );
                return None;
            }
            Value::Word(w) if w != "none" => {
                self.errors.at(
                    w.span(),
                    format!("unknown env stance `{w}`: write `env = deny` or `env = [\"HOME\", \"AWS_*\"]`"),
                );
                return None;
            }
            _ => {}
        }
        let lits = self.strings(value, "env", "variable name")?;
        self.parse_each::<EnvPattern>(&lits, "")
            .map(EnvPolicy::Allow)
    }

    fn risk(&mut self, value: &Value) -> Option<Risk> {
        const RISKS: &[&str] = &["low", "medium", "high", "critical"];
        match value {
            Value::Word(w) => match w.to_string().parse::<Risk>() {
                Ok(r) => Some(r),
                Err(_) => {
                    self.errors.at(
                        w.span(),
                        format!(
                            "unknown risk `{w}`: write one of `low`, `medium`, `high`, `critical`{}",
                            hint(&w.to_string(), RISKS)
                        ),
                    );
                    None
                }
            },
            Value::Str(s) if RISKS.contains(&s.value().as_str()) => {
                self.errors.at(
                    s.span(),
                    format!("write `risk = {}` without quotes", s.value()),
                );
                None
            }
            other => {
                self.errors.at(
                    other.span(),
                    format!(
                        "`risk` takes one of `low`, `medium`, `high`, `critical`, found {}",
                        other.describe()
                    ),
                );
                None
            }
        }
    }

    fn number<T: std::str::FromStr>(&mut self, value: &Value, key: &str) -> Option<T>
    where
        T::Err: std::fmt::Display,
    {
        match value {
            Value::Int(i) if i.base10_digits().starts_with('-') => {
                self.errors.at(
                    i.span(),
                    format!(
                        "`{key}` cannot be negative: write a whole number of at least 1, e.g. {}",
                        example(key)
                    ),
                );
                None
            }
            Value::Int(i) => match i.base10_parse::<T>() {
                Ok(n) => Some(n),
                Err(e) => {
                    self.errors.at(
                        i.span(),
                        format!("`{key}` must fit in {}: {e}", std::any::type_name::<T>()),
                    );
                    None
                }
            },
            other => {
                self.errors.at(
                    other.span(),
                    format!(
                        "`{key}` takes a whole number, found {}: e.g. {}",
                        other.describe(),
                        example(key)
                    ),
                );
                None
            }
        }
    }

    fn boolean(&mut self, value: &Value, key: &str) -> Option<bool> {
        match value {
            Value::Bool(b) => Some(b.value),
            Value::Str(s) if s.value() == "true" || s.value() == "false" => {
                self.errors.at(
                    s.span(),
                    format!("write `{key} = {}` without quotes", s.value()),
                );
                None
            }
            other => {
                self.errors.at(
                    other.span(),
                    format!(
                        "`{key}` takes `true` or `false`, found {}",
                        other.describe()
                    ),
                );
                None
            }
        }
    }

    fn tool_name(&mut self, value: &Value, key: &str) -> Option<String> {
        let (text, span) = match value {
            Value::Str(s) => (s.value(), s.span()),
            Value::Word(w) => (w.to_string(), w.span()),
            other => {
                self.errors.at(
                    other.span(),
                    format!("`{key}` takes a tool name, found {}", other.describe()),
                );
                return None;
            }
        };
        if let Err(e) = policy_runtime::tool::check_tool_name(&text) {
            self.errors.at(
                span,
                format!("`{}` is not a valid tool name: {e}", text.escape_debug()),
            );
            return None;
        }
        Some(text)
    }

    fn tool_names(&mut self, value: &Value) -> Option<Vec<(String, Span)>> {
        let items: Vec<&Value> = match value {
            Value::List(_, items) => items.iter().collect(),
            Value::Word(w) if w == "none" => Vec::new(),
            single => vec![single],
        };
        let mut out: Vec<(String, Span)> = Vec::new();
        for item in items {
            let name = self.tool_name(item, "only_after")?;
            if out.iter().any(|(n, _)| *n == name) {
                self.errors.at(
                    item.span(),
                    format!("`{name}` is listed twice in `only_after`; remove one"),
                );
                return None;
            }
            out.push((name, item.span()));
        }
        Some(out)
    }

    /// The cross-field rules, decided by the runtime ([`ToolPolicy::conflicts`], the same for
    /// TOML and JSON policies); each conflict is reported at the span of what it names.
    fn contradictions(&mut self, tool_name: &str) {
        let name = self.name.clone().unwrap_or_else(|| tool_name.to_string());
        for conflict in self.policy.conflicts(Some(&name)) {
            // Where the conflict is written: the tool's own name in `only_after`, or the key.
            let (written, name) = match &conflict {
                Conflict::OnlyAfterItself { tool } => (&self.only_after, tool.as_str()),
                Conflict::ContradictsForbidden { key } => (&self.constraint_spans, *key),
            };
            let span = written.iter().find(|(n, _)| n == name).map(|(_, s)| *s);
            let mut error = syn::Error::new(span.unwrap_or_else(Span::call_site), &conflict);
            if let (Conflict::ContradictsForbidden { .. }, Some(forbidden)) =
                (&conflict, self.forbidden_span)
            {
                error.combine(syn::Error::new(forbidden, "the tool is forbidden here"));
            }
            self.errors.push(error);
        }
    }
}

fn hint(word: &str, candidates: &[&str]) -> String {
    suggest::closest(word, candidates)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// The message for a key that does not belong where it is written: a typo, or a key of
/// another group.
fn misplaced(key: &str, place: &str, here: &[&str]) -> String {
    let home = if POLICY_KEYS.contains(&key) {
        Some("policy")
    } else if CONSTRAINT_KEYS.contains(&key) {
        Some("constraints")
    } else if LIMIT_KEYS.contains(&key) {
        Some("limits")
    } else if COMMAND_KEYS.contains(&key) {
        Some("commands")
    } else if TOP_KEYS.contains(&key) {
        None
    } else {
        return format!(
            "unknown key `{key}` in {place}: {}",
            suggest::help(key, here)
        );
    };
    match home {
        Some(group) => format!(
            "`{key}` belongs in `{group}(...)`, not in {place}: write `{group}({key} = ...)`"
        ),
        None => {
            format!("`{key}` is not allowed in {place}: write it at the top level of the attribute")
        }
    }
}

fn example(key: &str) -> &'static str {
    match key {
        "policy" => "`policy(fs.read = [\"/data/**\"], net = deny)`",
        "constraints" => "`constraints(max_invocations = 3, only_after = [fetch])`",
        "limits" => "`limits(timeout_ms = 5000)`",
        "commands" => {
            "`commands(max_level = 2, deny_args(git = [\"-c\"]), chains = true, approve_from = 2)`"
        }
        "max_level" | "approve_from" => "`max_level = 2`",
        "chains" => "`chains = true`",
        "paths" => "`paths(dest = write, src = read)`",
        "fs.read" | "fs.write" => "`fs.read = [\"/data/**\"]`",
        "net" => "`net = [\"api.example.com:443\"]`",
        "exec" => "`exec = [\"rg\"]`",
        "env" => "`env = [\"HOME\", \"AWS_*\"]`",
        "risk" => "`risk = high`",
        "max_invocations" => "`max_invocations = 3`",
        "only_after" => "`only_after = [fetch]`",
        "forbidden" | "requires_approval" => "`requires_approval = true`",
        _ => "`timeout_ms = 5000`",
    }
}

/// The error for an invalid glob, pointing into the literal where the runtime's parser stopped.
fn glob_error(lit: &LitStr, e: &GlobError) -> syn::Error {
    let text = lit.value();
    let offset = e.offset().min(text.len());
    // Sub-spans of a literal are not available to proc macros on stable, so the position is
    // also drawn under the glob in the message.
    let width = text[offset..].chars().next().map_or(1, |_| {
        let rest = &text[offset..];
        rest.find('/').unwrap_or(rest.len()).max(1)
    });
    let caret = format!(
        "{}{}",
        " ".repeat(text[..offset].chars().count()),
        "^".repeat(width)
    );
    syn::Error::new(
        lit.span(),
        format!(
            "invalid glob: {kind}\n  {text}\n  {caret}\nhelp: {help}",
            kind = e.kind(),
            help = e.help()
        ),
    )
}

/// The warning for a glob the OS sandbox may grant more widely than the gate matches it;
/// `None` when the grant is exact.
fn widening_message(glob: &Glob, grant: &OsGrant) -> Option<String> {
    let tree = grant.wider_tree()?;
    Some(match grant {
        OsGrant::FileIfExists { .. } => format!(
            "the OS sandbox enforces glob `{glob}` exactly if it names an existing file when the tool starts, and otherwise as the wider directory tree `{tree}` (Landlock grants whole trees); the in-process gate still matches `{glob}` exactly. Write `{tree}` to make the wider grant explicit, or make sure the file exists"
        ),
        _ => format!(
            "the OS sandbox enforces glob `{glob}` as the wider directory tree `{tree}` (Landlock grants whole trees); the in-process gate still matches `{glob}` exactly. Write `{tree}` to make the grant explicit, or narrow the glob to a `prefix/**` tree"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(attr: &str) -> syn::Result<Checked> {
        validate(&syn::parse_str::<Attr>(attr).unwrap(), "probe")
    }

    #[test]
    fn builds_the_runtime_policy() {
        let c = check(
            r#"policy(fs.read = "/data/*.csv", net = ["a.example.com:443"], risk = high),
               constraints(only_after = [fetch]), name = "renamed""#,
        )
        .unwrap();
        assert_eq!(c.name.as_deref(), Some("renamed"));
        assert_eq!(c.policy.risk, Some(Risk::High));
        assert_eq!(
            c.policy.constraints.only_after,
            Some(vec!["fetch".to_string()])
        );
        assert_eq!(c.widenings.len(), 1);
        assert!(c.widenings[0].message.contains("`/data/**`"));
    }

    #[test]
    fn reports_every_mistake_at_once() {
        let err = check(r#"policy(nett = deny, fs.read = "rel"), limits(timeout_ms = 0)"#)
            .err()
            .unwrap();
        let messages: Vec<String> = err.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[0].contains("did you mean `net`"));
        assert!(messages[1].contains("not an absolute path"));
        assert!(messages[2].contains("timeout_ms = 0"));
    }

    /// A literal path is granted exactly by the sandbox when it is an existing file at run
    /// time, which the attribute cannot know: the warning says both outcomes, as
    /// `policy_runtime::os_grant` decides them for the plan too.
    #[test]
    fn a_literal_file_warns_of_both_outcomes() {
        let c = check(r#"policy(fs.read = ["/etc/hosts", "/data/*.csv"])"#).unwrap();
        let [hosts, csv] = c.widenings.as_slice() else {
            panic!("two warnings")
        };
        assert!(
            hosts
                .message
                .contains("exactly if it names an existing file when the tool starts")
                && hosts
                    .message
                    .contains("otherwise as the wider directory tree `/etc/**`"),
            "{}",
            hosts.message
        );
        assert!(
            csv.message
                .contains("as the wider directory tree `/data/**`")
                && !csv.message.contains("existing file"),
            "{}",
            csv.message
        );
    }

    #[test]
    fn tree_globs_are_not_widened() {
        let c = check(r#"policy(fs.read = ["/a/**", "/**"], fs.write = "/b/c/**")"#).unwrap();
        assert!(c.widenings.is_empty());
    }
}
