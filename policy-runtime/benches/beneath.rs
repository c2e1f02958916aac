//! A safe read of a small file next to `std::fs::read` of the same file, in the same run.
//!
//! Each group times one safe variant and `std::fs::read` with the two interleaved (every
//! iteration runs both and times one), so that both see the same machine load:
//!
//! * `bound`: `ReadPath::read` through one path argument, read again and again;
//! * `fresh`: a new path argument per read, as a tool's first read of an argument is;
//! * `linked`: a new path argument per read whose path goes through a symlink that stays in the
//!   root (`data/latest -> 2024`): the open by whole name fails, and the file is opened beneath
//!   the root, whose kept descriptor is checked with one `stat`;
//! * `portable`: the cap-std backend, used where the kernel has no `openat2`.
//!
//! On Linux `bound` and `fresh` open the file by its whole name (no symlink on it); the bench
//! asserts that they do, so the figures are those of the path the tests cover.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use policy_runtime::beneath::{opened_by_name, uses_openat2, with_portable_backend};
use policy_runtime::ReadPath;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("data");
    std::fs::create_dir_all(root.join("2024")).unwrap();
    let file = root.join("2024/jan.csv");
    std::fs::write(&file, b"date,amount\n2024-01-01,12\n2024-01-02,7\n").unwrap();
    std::os::unix::fs::symlink("2024", root.join("latest")).unwrap();
    let linked = root.join("latest/jan.csv");
    let bound = ReadPath::beneath(&root, &file);
    let contents = std::fs::read(&file).unwrap();
    let before = opened_by_name();
    assert_eq!(bound.read().unwrap(), contents);
    assert_eq!(ReadPath::beneath(&root, &file).read().unwrap(), contents);
    assert_eq!(opened_by_name() - before, 2 * u64::from(uses_openat2()));
    assert_eq!(ReadPath::beneath(&root, &linked).read().unwrap(), contents);
    assert_eq!(opened_by_name() - before, 2 * u64::from(uses_openat2()));

    let std_read = |file: &Path| std::fs::read(black_box(file)).unwrap();
    // (name, the file `std::fs::read` reads beside it, the safe read)
    let variants: [(&str, &Path, &SafeRead<'_>); 4] = [
        ("bound", &file, &|| black_box(&bound).read().unwrap()),
        ("fresh", &file, &|| {
            ReadPath::beneath(&root, &file).read().unwrap()
        }),
        ("linked", &linked, &|| {
            ReadPath::beneath(&root, &linked).read().unwrap()
        }),
        ("portable", &file, &|| {
            with_portable_backend(|| black_box(&bound).read().unwrap())
        }),
    ];
    for (name, plain, safe) in variants {
        let mut group = c.benchmark_group(format!("small_file_read/{name}"));
        group.bench_function("std_fs_read", |b| {
            b.iter_custom(|iters| {
                paired(
                    iters,
                    || {
                        std_read(plain);
                    },
                    || {
                        safe();
                    },
                )
            })
        });
        group.bench_function("read_path_read", |b| {
            b.iter_custom(|iters| {
                paired(
                    iters,
                    || {
                        safe();
                    },
                    || {
                        std_read(plain);
                    },
                )
            })
        });
        group.finish();
        let (wall, cpu) = ratio(
            || {
                safe();
            },
            || {
                std_read(plain);
            },
        );
        println!("small_file_read/{name}: read_path_read / std_fs_read = {wall:.2}x wall, {cpu:.2}x thread CPU (median of {ROUNDS} alternating blocks)");
    }
}

/// A safe read under measurement.
type SafeRead<'a> = dyn Fn() -> Vec<u8> + 'a;

/// Rounds of [`ratio`], and reads per block.
const ROUNDS: usize = 31;
const BLOCK: u32 = 2000;

/// The median, over [`ROUNDS`] rounds, of the time `a` takes over the time `b` takes, each
/// timed over a block of [`BLOCK`] calls, in alternating order: wall time, and this thread's
/// CPU time (which a busy machine's waiting does not inflate).
fn ratio(a: impl Fn(), b: impl Fn()) -> (f64, f64) {
    let block = |f: &dyn Fn()| {
        let (wall, cpu) = (Instant::now(), thread_cpu());
        for _ in 0..BLOCK {
            f();
        }
        (wall.elapsed(), thread_cpu() - cpu)
    };
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    for round in 0..ROUNDS {
        let (ta, tb) = if round % 2 == 0 {
            let ta = block(&a);
            (ta, block(&b))
        } else {
            let tb = block(&b);
            (block(&a), tb)
        };
        walls.push(ta.0.as_secs_f64() / tb.0.as_secs_f64());
        cpus.push(ta.1.as_secs_f64() / tb.1.as_secs_f64().max(1e-9));
    }
    (median(&mut walls), median(&mut cpus))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// This thread's CPU time so far.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Runs `timed` and `other` in turn `iters` times; the time spent in `timed`.
fn paired(iters: u64, timed: impl Fn(), other: impl Fn()) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        timed();
        total += start.elapsed();
        other();
    }
    total
}

criterion_group!(benches, bench);
criterion_main!(benches);
