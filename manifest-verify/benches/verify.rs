//! Benchmarks of reading and comparing manifests (shapes in `support/shape.rs`).
//!
//! * `parse_and_diff/10000`: what a pull-request check does, in one number: read two
//!   10,000-tool manifests (every tenth tool changed) and compare them with a fresh verifier.
//! * `parse/10000`: reading one of them (policy-runtime's `Manifest::from_json_str`), next to
//!   `serde_json_value/10000` and `serde_json_ignored/10000`, serde_json alone reading the same
//!   text into a `Value` or skipping it: the floor of any reader.
//! * `diff/{1000,10000}`: comparing already loaded manifests, at two sizes.
//! * `diff_all_changed/1000`: every tool changed with globs of its own, the worst case for the
//!   glob cache.
//!
//! Memory (peak RSS at 10k, 50k and 100k tools) is measured by `scripts/verify-memory.sh`.
//! Like the command, the benchmark allocates with mimalloc.
//!
//! Run with `cargo bench -p manifest-verify --bench verify -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use manifest_verify::Verifier;
use policy_runtime::Manifest;

#[path = "support/shape.rs"]
mod shape;

/// The allocator of the `manifest-verify` command, so the figures are the command's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use shape::manifest_text;

fn parse(text: &str) -> Manifest {
    Manifest::from_json_str("bench.json", text).expect("bench manifests are valid")
}

fn bench(c: &mut Criterion) {
    let old_text = manifest_text(10_000, 10, false, false);
    let new_text = manifest_text(10_000, 10, true, false);

    let mut group = c.benchmark_group("parse_and_diff");
    group.sample_size(10);
    group.bench_function("10000", |b| {
        b.iter(|| {
            let (old, new) = (parse(&old_text), parse(&new_text));
            black_box(Verifier::new().diff(&old, &new))
        })
    });
    group.finish();

    let mut group = c.benchmark_group("parse");
    group.sample_size(10);
    group.bench_function("10000", |b| b.iter(|| black_box(parse(&new_text))));
    group.finish();
    let mut group = c.benchmark_group("serde_json_value");
    group.sample_size(10);
    group.bench_function("10000", |b| {
        b.iter(|| black_box(serde_json::from_str::<serde_json::Value>(&new_text).unwrap()))
    });
    group.finish();
    let mut group = c.benchmark_group("serde_json_ignored");
    group.sample_size(10);
    group.bench_function("10000", |b| {
        b.iter(|| black_box(serde_json::from_str::<serde::de::IgnoredAny>(&new_text).unwrap()))
    });
    group.finish();

    let mut group = c.benchmark_group("diff_all_changed");
    group.sample_size(10);
    let old = parse(&manifest_text(1_000, 1, false, true));
    let new = parse(&manifest_text(1_000, 1, true, true));
    group.bench_function("1000", |b| {
        b.iter(|| black_box(Verifier::new().diff(&old, &new)))
    });
    group.finish();
    drop((old, new));

    let mut group = c.benchmark_group("diff");
    group.sample_size(10);
    for tools in [1_000, 10_000] {
        let old = parse(&manifest_text(tools, 10, false, false));
        let new = parse(&manifest_text(tools, 10, true, false));
        group.bench_with_input(BenchmarkId::from_parameter(tools), &tools, |b, _| {
            b.iter(|| black_box(Verifier::new().diff(&old, &new)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
