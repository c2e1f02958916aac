//! The union of several tools' policies: one policy that admits everything each of them
//! admits, so a whole agent can be confined under what its tools together may do (the
//! sandbox crate's `confine_self`).
//!
//! Each part takes the wider of its inputs, reading an unspecified part as its run-time
//! meaning: unspecified `fs.read`/`fs.write` grant nothing beyond the system defaults, so they
//! add nothing; unspecified `net` is `deny`; unspecified `exec` is `allow`; unspecified `env`
//! inherits everything; an unspecified limit is no limit. The union keeps a part unspecified
//! only when every input leaves it unspecified.
//!
//! Constraints (`max_invocations`, `only_after`, ...) and command policies are judged per call,
//! not by the kernel for a process: the union has none. Its risk is the highest declared.
//!
//! ```
//! use policy_runtime::union::union;
//! use policy_runtime::{NetPolicy, ToolPolicy};
//!
//! let a = ToolPolicy::from_json_str("a", r#"{"fs": {"read": ["/data/**"]}, "net": "deny"}"#)?;
//! let b = ToolPolicy::from_json_str("b", r#"{"fs": {"write": ["/out/**"]}, "net": {"hosts": ["api.example.com:443"]}}"#)?;
//! let u = union([&a, &b]);
//! assert!(u.fs.read.as_ref().unwrap().is_match("/data/x"));
//! assert!(u.fs.write.as_ref().unwrap().is_match("/out/r.md"));
//! assert!(matches!(u.net, Some(NetPolicy::Hosts(ref h)) if h.len() == 1));
//! # Ok::<(), policy_runtime::LoadError>(())
//! ```

use crate::glob::GlobList;
use crate::policy::{
    Constraints, EnvPolicy, ExecPolicy, FsPolicy, Limits, NetPolicy, Stance, ToolPolicy,
};

/// The union of `policies` (see the [module](self) for what each part becomes). The union of
/// no policy is the empty (all-unspecified) policy.
pub fn union<'a>(policies: impl IntoIterator<Item = &'a ToolPolicy>) -> ToolPolicy {
    let policies: Vec<&ToolPolicy> = policies.into_iter().collect();
    ToolPolicy {
        risk: policies.iter().filter_map(|p| p.risk).max(),
        fs: FsPolicy {
            read: globs(policies.iter().map(|p| p.fs.read.as_ref())),
            write: globs(policies.iter().map(|p| p.fs.write.as_ref())),
        },
        net: net(&policies),
        exec: exec(&policies),
        env: env(&policies),
        constraints: Constraints::default(),
        commands: None,
        limits: limits(&policies),
    }
}

/// Every glob of every declared list, once each, in first-seen order; unspecified when no
/// input declares the list.
fn globs<'a>(lists: impl Iterator<Item = Option<&'a GlobList>>) -> Option<GlobList> {
    let mut declared = false;
    let mut out = Vec::new();
    for list in lists.flatten() {
        declared = true;
        for glob in list.globs() {
            if !out.contains(glob) {
                out.push(glob.clone());
            }
        }
    }
    declared.then(|| GlobList::from_globs(out))
}

/// The wider of several effective stances ([`ToolPolicy::net_stance`] and its siblings decide
/// what unspecified and empty mean; the union only widens): anything wins, lists join.
fn widest<'a, T: Clone + PartialEq + 'a>(
    stances: impl Iterator<Item = Stance<'a, T>>,
) -> Widest<T> {
    let mut out = Widest::Nothing;
    for stance in stances {
        out = match (out, stance) {
            (Widest::Anything, _) | (_, Stance::Anything) => Widest::Anything,
            (out, Stance::Nothing) => out,
            (Widest::Nothing, Stance::Only(more)) => Widest::Only(more.to_vec()),
            (Widest::Only(mut have), Stance::Only(more)) => {
                for item in more {
                    if !have.contains(item) {
                        have.push(item.clone());
                    }
                }
                Widest::Only(have)
            }
        };
    }
    out
}

enum Widest<T> {
    Nothing,
    Anything,
    Only(Vec<T>),
}

/// `None` when every input leaves the part unspecified, so the union says no more than they do.
fn declared(policies: &[&ToolPolicy], part: fn(&ToolPolicy) -> bool) -> bool {
    policies.iter().any(|p| part(p))
}

fn net(policies: &[&ToolPolicy]) -> Option<NetPolicy> {
    declared(policies, |p| p.net.is_some()).then(|| {
        match widest(policies.iter().map(|p| p.net_stance())) {
            Widest::Nothing => NetPolicy::Deny,
            Widest::Anything => NetPolicy::Allow,
            Widest::Only(hosts) => NetPolicy::Hosts(hosts),
        }
    })
}

fn exec(policies: &[&ToolPolicy]) -> Option<ExecPolicy> {
    declared(policies, |p| p.exec.is_some()).then(|| {
        match widest(policies.iter().map(|p| p.exec_stance())) {
            Widest::Nothing => ExecPolicy::Deny,
            Widest::Anything => ExecPolicy::Allow,
            Widest::Only(programs) => ExecPolicy::AllowList(programs),
        }
    })
}

/// Unspecified env inherits everything, so a union with any unspecified input is unspecified
/// too (rather than `allow`, which the model has no spelling for).
fn env(policies: &[&ToolPolicy]) -> Option<EnvPolicy> {
    match widest(policies.iter().map(|p| p.env_stance())) {
        Widest::Anything => None,
        Widest::Nothing => declared(policies, |p| p.env.is_some()).then_some(EnvPolicy::Deny),
        Widest::Only(patterns) => Some(EnvPolicy::Allow(patterns)),
    }
}

/// Each limit is the largest declared, and no limit when any input has none.
fn limits(policies: &[&ToolPolicy]) -> Limits {
    let max = |get: fn(&Limits) -> Option<u64>| -> Option<u64> {
        policies
            .iter()
            .map(|p| get(&p.limits))
            .try_fold(0u64, |acc, v| v.map(|v| acc.max(v)))
            .filter(|_| !policies.is_empty())
    };
    Limits {
        timeout_ms: max(|l| l.timeout_ms),
        memory_bytes: max(|l| l.memory_bytes),
        cpu_seconds: max(|l| l.cpu_seconds),
        max_processes: max(|l| l.max_processes),
        max_output_bytes: max(|l| l.max_output_bytes),
        max_file_bytes: max(|l| l.max_file_bytes),
        max_open_files: max(|l| l.max_open_files),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(json: &str) -> ToolPolicy {
        ToolPolicy::from_json_str("t", json).unwrap()
    }

    #[test]
    fn unspecified_parts_stay_unspecified_only_when_every_input_leaves_them() {
        let u = union([&p("{}"), &p("{}")]);
        assert_eq!(u, ToolPolicy::default());
        assert_eq!(union([]), ToolPolicy::default());
    }

    #[test]
    fn fs_lists_concatenate_without_duplicates() {
        let u = union([
            &p(r#"{"fs": {"read": ["/a/**", "/b/*.txt"]}}"#),
            &p(r#"{"fs": {"read": ["/a/**"], "write": ["/out/**"]}}"#),
            &p("{}"),
        ]);
        let read: Vec<&str> =
            u.fs.read
                .as_ref()
                .unwrap()
                .globs()
                .iter()
                .map(|g| g.as_str())
                .collect();
        assert_eq!(read, ["/a/**", "/b/*.txt"]);
        assert!(u.fs.write.unwrap().is_match("/out/x"));
    }

    #[test]
    fn net_takes_the_widest_stance() {
        let deny = p(r#"{"net": "deny"}"#);
        let hosts = p(r#"{"net": {"hosts": ["a.example:443", "b.example:80"]}}"#);
        let more = p(r#"{"net": {"hosts": ["a.example:443", "c.example:8080"]}}"#);
        let allow = p(r#"{"net": "allow"}"#);
        assert_eq!(union([&deny, &p("{}")]).net, Some(NetPolicy::Deny));
        match union([&deny, &hosts, &more]).net {
            Some(NetPolicy::Hosts(h)) => assert_eq!(h.len(), 3),
            other => panic!("{other:?}"),
        }
        assert_eq!(union([&hosts, &allow, &deny]).net, Some(NetPolicy::Allow));
    }

    #[test]
    fn exec_unspecified_counts_as_allow() {
        let deny = p(r#"{"exec": "deny"}"#);
        let list = p(r#"{"exec": {"allow": ["grep", "/bin/sh"]}}"#);
        let list2 = p(r#"{"exec": {"allow": ["grep", "curl"]}}"#);
        assert_eq!(union([&deny, &deny]).exec, Some(ExecPolicy::Deny));
        match union([&deny, &list, &list2]).exec {
            Some(ExecPolicy::AllowList(names)) => {
                let names: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
                assert_eq!(names, ["grep", "/bin/sh", "curl"]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(union([&list, &p("{}")]).exec, Some(ExecPolicy::Allow));
        assert_eq!(union([&p("{}")]).exec, None);
    }

    #[test]
    fn env_unspecified_inherits_everything() {
        let deny = p(r#"{"env": "deny"}"#);
        let list = p(r#"{"env": {"allow": ["HOME", "PATH"]}}"#);
        assert_eq!(union([&deny, &deny]).env, Some(EnvPolicy::Deny));
        assert!(matches!(union([&deny, &list]).env, Some(EnvPolicy::Allow(ref v)) if v.len() == 2));
        assert_eq!(union([&list, &p("{}")]).env, None);
    }

    #[test]
    fn limits_take_the_largest_and_none_wins() {
        let a = p(r#"{"limits": {"timeout_ms": 10, "memory_bytes": 100}}"#);
        let b = p(r#"{"limits": {"timeout_ms": 20}}"#);
        let u = union([&a, &b]);
        assert_eq!(u.limits.timeout_ms, Some(20));
        assert_eq!(u.limits.memory_bytes, None);
    }

    #[test]
    fn risk_is_the_highest_and_constraints_are_dropped() {
        let a = p(r#"{"risk": "low", "constraints": {"max_invocations": 2}}"#);
        let b = p(r#"{"risk": "high"}"#);
        let u = union([&a, &b]);
        assert_eq!(u.risk, Some(crate::policy::Risk::High));
        assert!(u.constraints.is_unspecified());
    }
}
