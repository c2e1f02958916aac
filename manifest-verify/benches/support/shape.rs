//! The manifests of the benchmarks, shared by `benches/verify.rs` and the memory script's
//! generator (`examples/bench_manifests.rs`).
//!
//! Each tool has 5 globs (3 read, 2 write), a host, `exec: deny`, an env list and a constraint.
//! Globs come from shared families (`unique = false`), as real tools share directories, or are
//! the tool's own (`unique = true`, the worst case for any cache of compiled globs). In the new
//! manifest, every `changed_every`-th tool changed: a widened glob, a narrowed glob, a
//! reordering or a host added, the shape of a large pull request.

use serde_json::{json, Map, Value};

/// The five globs of tool `i`; `changed` applies the benchmark's edits.
fn globs(i: usize, changed: bool, unique: bool) -> Vec<String> {
    let k = if unique { i } else { i % 600 };
    let mut g = vec![
        format!("/data/team{}/**", k % 50),
        format!("/srv/app{}/*.log", k % 200),
        format!("/home/*/proj{}/{{src,docs}}/**", k % 100),
        format!("/tmp/cache{}/[a-z]*", k % 20),
        format!("/var/lib/svc{}/?/x.db", k % 300),
    ];
    if unique {
        g = g
            .into_iter()
            .map(|s| s.replacen('/', &format!("/u{i}/"), 1))
            .collect();
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
pub fn manifest_text(tools: usize, changed_every: usize, new: bool, unique: bool) -> String {
    let mut map = Map::new();
    for i in 0..tools {
        let changed = new && i % changed_every == 0;
        let mut hosts = vec![format!("api{}.example.com:443", i % 30)];
        if changed && i % 3 == 0 {
            hosts.push(format!("*.cdn{}.example.net:443", i % 7));
        }
        let g = globs(i, changed, unique);
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
