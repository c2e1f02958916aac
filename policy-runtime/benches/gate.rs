//! One gate decision (3 path arguments, 5 globs) next to a baseline that resolves the same
//! paths with `std::fs::canonicalize` before matching them; the same decision listing the
//! judged paths (`checked_paths`, what `policy-sandbox gate` prints); and one decision against
//! a policy of 5,400 globs.
//!
//! After criterion, the gate and the baseline run interleaved (batches of each in turn, so both
//! see the same machine load) and the medians, the time per path argument and the ratio are
//! printed: `cargo bench -p policy-runtime --bench gate`.
//!
//! The gate's time excludes cloning the arguments (the gate rewrites them in place, so each
//! call gets a fresh copy, made outside the timing); `args_clone_only` shows that cost.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use policy_runtime::gate::{check_args, checked_paths};
use policy_runtime::tool::{Access, PathArg};
use policy_runtime::ToolPolicy;
use serde_json::{json, Value};

/// The fixture: a policy of 5 globs, the call's typed arguments and arguments (3 paths, one of
/// them with `.` and `..` to normalize, one nested in an untyped option), and the same 3 paths
/// for the baseline.
struct Fixture {
    _dir: tempfile::TempDir,
    policy: ToolPolicy,
    typed: [PathArg; 2],
    args: Value,
    paths: [String; 3],
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let root = root.to_str().unwrap().to_string();
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
    Fixture {
        _dir: dir,
        policy,
        typed,
        args,
        paths,
    }
}

fn canonicalize_baseline(f: &Fixture) {
    let read = f.policy.fs.read.as_ref().unwrap();
    let write = f.policy.fs.write.as_ref().unwrap();
    for p in &f.paths {
        let real = std::fs::canonicalize(p).unwrap();
        let s = real.to_str().unwrap();
        black_box(read.is_match(s) || write.is_match(s));
    }
}

fn bench(c: &mut Criterion) {
    let f = fixture();
    let mut group = c.benchmark_group("gate_3_paths_5_globs");
    group.bench_function("lexical_gate", |b| {
        b.iter_batched_ref(
            || f.args.clone(),
            |a| black_box(check_args(&f.policy, &f.typed, a, None)).unwrap(),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("lexical_gate_listing_paths", |b| {
        b.iter_batched_ref(
            || f.args.clone(),
            |a| black_box(checked_paths(&f.policy, &f.typed, a, None).unwrap()),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("args_clone_only", |b| b.iter(|| black_box(f.args.clone())));
    group.bench_function("canonicalize_baseline", |b| {
        b.iter(|| canonicalize_baseline(&f))
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
        b.iter_batched_ref(
            || args.clone(),
            |a| black_box(check_args(&big, &f.typed, a, None)).unwrap(),
            BatchSize::SmallInput,
        )
    });

    interleaved_ratio(&f, 200);
}

/// Runs the gate and the baseline in turn, `rounds` batches each, and prints the medians and
/// the ratio the issue sets a bar for (the gate at least 30 times faster than the baseline, at
/// most 0.3 µs per path argument).
fn interleaved_ratio(f: &Fixture, rounds: usize) {
    const BATCH: u32 = 200;
    let mut inputs: Vec<Value> = Vec::with_capacity(BATCH as usize);
    let (mut gate, mut listing, mut baseline) = (Vec::new(), Vec::new(), Vec::new());
    // One batch of calls on fresh copies of the arguments (made outside the timing), per call.
    let mut batch = |call: &dyn Fn(&mut Value)| {
        inputs.clear();
        inputs.extend((0..BATCH).map(|_| f.args.clone()));
        let start = Instant::now();
        for a in &mut inputs {
            call(a);
        }
        start.elapsed() / BATCH
    };
    for _ in 0..rounds {
        gate.push(batch(&|a| {
            black_box(check_args(&f.policy, &f.typed, a, None)).unwrap();
        }));
        listing.push(batch(&|a| {
            black_box(checked_paths(&f.policy, &f.typed, a, None).unwrap());
        }));
        let start = Instant::now();
        for _ in 0..BATCH {
            canonicalize_baseline(f);
        }
        baseline.push(start.elapsed() / BATCH);
    }
    let (gate, listing) = (median(&mut gate), median(&mut listing));
    let baseline = median(&mut baseline);
    println!(
        "interleaved ({rounds} rounds of {BATCH}): gate {:.3} µs ({:.3} µs per path argument), \
         canonicalize baseline {:.2} µs; the gate is {:.1}x faster. Listing the judged paths \
         too (checked_paths): {:.3} µs, {:.1}x",
        micros(gate),
        micros(gate) / f.paths.len() as f64,
        micros(baseline),
        baseline.as_secs_f64() / gate.as_secs_f64(),
        micros(listing),
        baseline.as_secs_f64() / listing.as_secs_f64()
    );
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

criterion_group!(benches, bench);
criterion_main!(benches);
