//! Benchmarks of reading and comparing manifests (shapes in `support/shape.rs`).
//!
//! * `parse_and_diff/10000`: what a pull-request check does, in one number: read two
//!   10,000-tool manifests (every tenth tool changed) and compare them with a fresh verifier.
//! * `parse/10000`: reading one of them (policy-runtime's `Manifest::from_json_str`), next to
//!   `serde_json_value/10000` and `serde_json_ignored/10000`, serde_json alone reading the same
//!   text into a `Value` or skipping it: the floor of any reader.
//! * `diff/{1000,10000}`: comparing already loaded manifests, at two sizes.
//! * `diff_all_changed/1000`: every tool changed with globs of its own, the worst case for the
//!   glob cache; `diff_all_changed/1000_wild`: the same under a wildcard directory of each
//!   tool's own, so that no literal directories can be read off first and every comparison is
//!   one search of automata compiled for it alone.
//!
//! After criterion, the same cases run round-robin (so load from other processes on a shared
//! machine hits all of them alike) and their median wall and CPU times are printed: CPU time is
//! the whole process's (every thread), so it stays comparable when the machine is loaded.
//! The bars: `parse_and_diff/10000` and `diff_all_changed/1000` under 100 ms each.
//!
//! Memory (peak RSS at 10k, 50k and 100k tools) is measured by `scripts/verify-memory.sh`.
//! Like the command, the benchmark allocates with mimalloc.
//!
//! Run with `cargo bench -p manifest-verify --bench verify -- --warm-up-time 1 --measurement-time 3`;
//! only the interleaved table: `cargo bench -p manifest-verify --bench verify -- zzz_nomatch`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion};
use manifest_verify::Verifier;
use policy_runtime::Manifest;

#[path = "support/shape.rs"]
mod shape;

/// The allocator of the `manifest-verify` command, so the figures are the command's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use shape::{manifest_text, Globs};

fn parse(text: &str) -> Manifest {
    Manifest::from_json_str("bench.json", text).expect("bench manifests are valid")
}

fn bench(c: &mut Criterion) {
    let old_text = manifest_text(10_000, 10, false, Globs::Shared);
    let new_text = manifest_text(10_000, 10, true, Globs::Shared);

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
    let old = parse(&manifest_text(1_000, 1, false, Globs::Own));
    let new = parse(&manifest_text(1_000, 1, true, Globs::Own));
    group.bench_function("1000", |b| {
        b.iter(|| black_box(Verifier::new().diff(&old, &new)))
    });
    let old = parse(&manifest_text(1_000, 1, false, Globs::OwnWild));
    let new = parse(&manifest_text(1_000, 1, true, Globs::OwnWild));
    group.bench_function("1000_wild", |b| {
        b.iter(|| black_box(Verifier::new().diff(&old, &new)))
    });
    group.finish();
    drop((old, new));

    let mut group = c.benchmark_group("diff");
    group.sample_size(10);
    for tools in [1_000, 10_000] {
        let old = parse(&manifest_text(tools, 10, false, Globs::Shared));
        let new = parse(&manifest_text(tools, 10, true, Globs::Shared));
        group.bench_with_input(BenchmarkId::from_parameter(tools), &tools, |b, _| {
            b.iter(|| black_box(Verifier::new().diff(&old, &new)))
        });
    }
    group.finish();
}

/// CPU time of the whole process so far (user and system, every thread).
fn cpu_now() -> Duration {
    // SAFETY: clock_gettime fills the zeroed struct it is given.
    let ts = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts);
        ts
    };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The cases of the criterion groups with a bar, plus their parts, run round-robin `rounds`
/// times; prints each one's median wall and CPU time in milliseconds.
fn interleaved(rounds: usize) {
    let old_text = manifest_text(10_000, 10, false, Globs::Shared);
    let new_text = manifest_text(10_000, 10, true, Globs::Shared);
    let (old, new) = (parse(&old_text), parse(&new_text));
    let all_old = parse(&manifest_text(1_000, 1, false, Globs::Own));
    let all_new = parse(&manifest_text(1_000, 1, true, Globs::Own));
    let wild_old = parse(&manifest_text(1_000, 1, false, Globs::OwnWild));
    let wild_new = parse(&manifest_text(1_000, 1, true, Globs::OwnWild));
    type Case<'a> = (&'static str, Box<dyn Fn() + 'a>);
    let cases: Vec<Case<'_>> = vec![
        (
            "parse_and_diff/10000",
            Box::new(|| {
                let (o, n) = (parse(&old_text), parse(&new_text));
                black_box(Verifier::new().diff(&o, &n));
            }),
        ),
        (
            "diff_all_changed/1000",
            Box::new(|| {
                black_box(Verifier::new().diff(&all_old, &all_new));
            }),
        ),
        (
            "diff_all_changed/1000_wild",
            Box::new(|| {
                black_box(Verifier::new().diff(&wild_old, &wild_new));
            }),
        ),
        (
            "parse/10000",
            Box::new(|| {
                black_box(parse(&new_text));
            }),
        ),
        (
            "diff/10000",
            Box::new(|| {
                black_box(Verifier::new().diff(&old, &new));
            }),
        ),
        (
            "serde_json_ignored/10000",
            Box::new(|| {
                black_box(serde_json::from_str::<serde::de::IgnoredAny>(&new_text).unwrap());
            }),
        ),
    ];
    let mut times = vec![(Vec::new(), Vec::new()); cases.len()];
    for _ in 0..rounds {
        for ((_, case), (wall, cpu)) in cases.iter().zip(&mut times) {
            let (start, cpu_start) = (Instant::now(), cpu_now());
            case();
            wall.push(start.elapsed());
            cpu.push(cpu_now().saturating_sub(cpu_start));
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e3
    };
    println!(
        "interleaved, {rounds} rounds (median ms; bar: parse_and_diff and diff_all_changed < 100):"
    );
    for ((name, _), (wall, cpu)) in cases.iter().zip(&mut times) {
        println!(
            "  {name:<26} wall {:8.2}  cpu {:8.2}",
            median(wall),
            median(cpu)
        );
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    // `cargo test --benches` runs this binary without --bench: only smoke-test there.
    if std::env::args().any(|a| a == "--bench") {
        interleaved(15);
    }
}
