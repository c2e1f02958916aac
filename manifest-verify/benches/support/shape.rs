//! The manifests of the benchmarks, shared by `benches/verify.rs` and the memory script's
//! generator (`examples/bench_manifests.rs`).
//!
//! Each tool has 5 globs (3 read, 2 write), a host, `exec: deny`, an env list and a constraint.
//! Globs come from shared families ([`Globs::Shared`]), as real tools share directories, or are
//! the tool's own: under a directory of its own ([`Globs::Own`], the worst case for a cache of
//! compiled glob sets), or under a wildcard directory of its own ([`Globs::OwnWild`], which
//! also leaves no literal directories to read off before comparing: every comparison is one
//! search of automata compiled for it alone). In the new manifest, every `changed_every`-th
//! tool changed: a widened glob, a narrowed glob, a reordering or a host added, the shape of a
//! large pull request.

use serde_json::{json, Map, Value};

/// Where the tools' globs come from (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(dead_code)] // each user of this module picks its own
pub enum Globs {
    /// Shared families of directories.
    Shared,
    /// The tool's own: `/u{tool}/...`.
    Own,
    /// The tool's own under a wildcard: `/u{tool}?/...`.
    OwnWild,
}

/// The five globs of tool `i`; `changed` applies the benchmark's edits.
fn globs(i: usize, changed: bool, family: Globs) -> Vec<String> {
    let k = if family == Globs::Shared { i % 600 } else { i };
    let mut g = vec![
        format!("/data/team{}/**", k % 50),
        format!("/srv/app{}/*.log", k % 200),
        format!("/home/*/proj{}/{{src,docs}}/**", k % 100),
        format!("/tmp/cache{}/[a-z]*", k % 20),
        format!("/var/lib/svc{}/?/x.db", k % 300),
    ];
    let own = match family {
        Globs::Shared => None,
        Globs::Own => Some(format!("/u{i}/")),
        Globs::OwnWild => Some(format!("/u{i}?/")),
    };
    if let Some(own) = own {
        g = g.into_iter().map(|s| s.replacen('/', &own, 1)).collect();
    }
    if changed {
        match (i / 10) % 4 {
            0 => g[1] = g[1].replace("*.log", "**"),        // widened
            1 => g[0] = g[0].replace("/**", "/reports/**"), // narrowed
            2 => g.swap(0, 2),                              // reordered inside fs.read: equivalent
            _ => g[4] = g[4].replace('?', "*"),             // widened
        }
    }
    g
}

/// The JSON text of a manifest of `tools` tools (see the module docs).
pub fn manifest_text(tools: usize, changed_every: usize, new: bool, family: Globs) -> String {
    let mut map = Map::new();
    for i in 0..tools {
        let changed = new && i % changed_every == 0;
        let mut hosts = vec![format!("api{}.example.com:443", i % 30)];
        if changed && i % 3 == 0 {
            hosts.push(format!("*.cdn{}.example.net:443", i % 7));
        }
        let g = globs(i, changed, family);
        map.insert(
            format!("tool{i:06}"),
            json!({
                "risk": "medium",
                "fs": { "read": &g[..3], "write": &g[3..] },
                "net": { "hosts": hosts },
                "exec": "deny",
                "env": { "allow": ["HOME", "LANG"] },
                "constraints": { "max_invocations": 10 },
            }),
        );
    }
    json!({ "manifest_version": 1, "tools": Value::Object(map) }).to_string()
}
