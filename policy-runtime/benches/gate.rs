//! One gate decision (3 path arguments, 5 globs) next to a baseline that resolves the same
//! paths with `std::fs::canonicalize` before matching them; and one decision against a policy
//! of 5,400 globs.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use policy_runtime::gate::check_args;
use policy_runtime::tool::{Access, PathArg};
use policy_runtime::ToolPolicy;
use serde_json::json;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let root = root.to_str().unwrap();
    for d in ["data/2024", "out/reports", "src"] {
        std::fs::create_dir_all(format!("{root}/{d}")).unwrap();
    }
    for f in ["data/2024/jan.csv", "out/reports/r.md", "src/lib.rs"] {
        std::fs::write(format!("{root}/{f}"), b"x").unwrap();
    }
    let policy = ToolPolicy::from_json_str(
        "bench",
        &format!(
            r#"{{"fs": {{"read": ["{root}/data/**", "{root}/src/**/*.rs", "{root}/docs/*.md"],
                 "write": ["{root}/out/**", "{root}/tmp/{{a,b}}/*"]}}}}"#
        ),
    )
    .unwrap();
    let typed = [
        PathArg {
            name: "src".into(),
            access: Access::Read,
        },
        PathArg {
            name: "dest".into(),
            access: Access::Write,
        },
    ];
    let args = json!({
        "src": format!("{root}/data/./2024/../2024/jan.csv"),
        "dest": format!("{root}/out/reports/r.md"),
        "opts": {"include": [format!("{root}/src/lib.rs")]},
    });
    let paths = [
        format!("{root}/data/./2024/../2024/jan.csv"),
        format!("{root}/out/reports/r.md"),
        format!("{root}/src/lib.rs"),
    ];
    let mut group = c.benchmark_group("gate_3_paths_5_globs");
    group.bench_function("lexical_gate", |b| {
        b.iter(|| {
            let mut a = args.clone();
            black_box(check_args(&policy, &typed, &mut a, None).unwrap());
        })
    });
    group.bench_function("args_clone_only", |b| b.iter(|| black_box(args.clone())));
    let globs_read = policy.fs.read.as_ref().unwrap();
    let globs_write = policy.fs.write.as_ref().unwrap();
    group.bench_function("canonicalize_baseline", |b| {
        b.iter(|| {
            for p in &paths {
                let real = std::fs::canonicalize(p).unwrap();
                let s = real.to_str().unwrap();
                black_box(globs_read.is_match(s) || globs_write.is_match(s));
            }
        })
    });
    group.finish();

    // A policy of 5,400 per-project globs (issue 18): matched through the literal-prefix index.
    let globs: Vec<String> = (0..5_400)
        .map(|n| format!("\"/srv/agent/project-{n}/**\""))
        .collect();
    let big = ToolPolicy::from_json_str(
        "big",
        &format!(r#"{{"fs": {{"write": [{}]}}}}"#, globs.join(",")),
    )
    .unwrap();
    let args = json!({"dest": "/srv/agent/project-4321/src/main.rs", "n": 3});
    c.bench_function("gate_1_path_5400_globs", |b| {
        b.iter(|| {
            let mut a = args.clone();
            black_box(check_args(&big, &typed, &mut a, None).unwrap());
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
