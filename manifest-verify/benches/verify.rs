//! Benchmarks of the manifest diff.
//!
//! * `diff/10000`: two 10,000-tool manifests with 5 globs each, where every tenth tool changed
//!   (a widened glob, a narrowed glob, a reordering, a host added), the shape of a large pull
//!   request. Globs come from shared families, as real tools share directories.
//! * `diff/{1000,10000,100000}`: the same shape at three sizes, for scaling.
//! * `diff_all_changed/1000`: every tool changed with globs of its own, the worst case for the
//!   glob cache.
//! * `parse/10000`: reading one 10,000-tool manifest (policy-runtime's parser), for context.
//!
//! The 100,000-tool case needs about 20 GB of memory (see `bench`); run the others alone with
//! the filter `'parse|diff_all_changed|diff/1000$|diff/10000$'`.
//!
//! Run with `cargo bench -p manifest-verify --bench verify -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use manifest_verify::Verifier;
use policy_runtime::Manifest;
use serde_json::{json, Map, Value};

/// The five globs of tool `i`; `changed` applies this benchmark's edits.
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

fn manifest(tools: usize, changed_every: usize, new: bool, unique: bool) -> Manifest {
    let mut map = Map::new();
    for i in 0..tools {
        let changed = new && i % changed_every == 0;
        let mut hosts = vec![format!("api{}.example.com:443", i % 30)];
        if changed && i % 3 == 0 {
            hosts.push(format!("*.cdn{}.example.net:443", i % 7));
        }
        map.insert(
            format!("tool{i:06}"),
            json!({
                "risk": "medium",
                "fs": { "read": &globs(i, changed, unique)[..3], "write": &globs(i, changed, unique)[3..] },
                "net": { "hosts": hosts },
                "exec": "deny",
                "env": { "allow": ["HOME", "LANG"] },
                "constraints": { "max_invocations": 10 },
            }),
        );
    }
    let doc = json!({ "manifest_version": 1, "tools": Value::Object(map) });
    Manifest::from_json_str("bench.json", &doc.to_string()).expect("bench manifests are valid")
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    group.sample_size(10);
    let text = manifest(10_000, 10, true, false).to_json();
    group.bench_function("10000", |b| {
        b.iter(|| black_box(Manifest::from_json_str("bench.json", &text).unwrap()))
    });
    group.finish();

    let mut group = c.benchmark_group("diff_all_changed");
    group.sample_size(10);
    let old = manifest(1_000, 1, false, true);
    let new = manifest(1_000, 1, true, true);
    group.bench_function("1000", |b| {
        b.iter(|| black_box(Verifier::new().diff(&old, &new)))
    });
    group.finish();
    drop((old, new));

    // Last, and one size at a time: two 100,000-tool manifests hold a million compiled globs
    // (about 20 GB with policy-runtime's per-glob regexes).
    let mut group = c.benchmark_group("diff");
    group.sample_size(10);
    for tools in [1_000, 10_000, 100_000] {
        let old = manifest(tools, 10, false, false);
        let new = manifest(tools, 10, true, false);
        group.bench_with_input(BenchmarkId::from_parameter(tools), &tools, |b, _| {
            b.iter(|| black_box(Verifier::new().diff(&old, &new)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
