//! A safe read of a small file next to `std::fs::read` of the same file, in the same run.
//!
//! Each group times one safe variant and `std::fs::read` with the two interleaved (every
//! iteration runs both and times one), so that both see the same machine load:
//!
//! * `bound`: `ReadPath::read` through a path argument whose root is already looked up;
//! * `fresh`: a new path argument per read, as a tool's first read of an argument is (the root
//!   is looked up again);
//! * `portable`: the cap-std backend, used where the kernel has no `openat2`.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use policy_runtime::beneath::with_portable_backend;
use policy_runtime::ReadPath;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("data");
    std::fs::create_dir_all(root.join("2024")).unwrap();
    let file = root.join("2024/jan.csv");
    std::fs::write(&file, b"date,amount\n2024-01-01,12\n2024-01-02,7\n").unwrap();
    let bound = ReadPath::beneath(&root, &file);
    assert_eq!(bound.read().unwrap(), std::fs::read(&file).unwrap());

    let std_read = |file: &Path| std::fs::read(black_box(file)).unwrap();
    let variants: [(&str, &dyn Fn() -> Vec<u8>); 3] = [
        ("bound", &|| black_box(&bound).read().unwrap()),
        ("fresh", &|| ReadPath::beneath(&root, &file).read().unwrap()),
        ("portable", &|| {
            with_portable_backend(|| black_box(&bound).read().unwrap())
        }),
    ];
    for (name, safe) in variants {
        let mut group = c.benchmark_group(format!("small_file_read/{name}"));
        group.bench_function("std_fs_read", |b| {
            b.iter_custom(|iters| {
                paired(
                    iters,
                    || {
                        std_read(&file);
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
                        std_read(&file);
                    },
                )
            })
        });
        group.finish();
    }
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
