//! A safe read of a small file (`ReadPath::read`: `openat2` beneath the root, read) next to
//! `std::fs::read` of the same file, in the same run: through a bound path whose root is already
//! open, through a fresh one (which opens the root first, as a tool's first read does), and on
//! the portable (cap-std) backend for hosts without `openat2`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use policy_runtime::beneath::with_portable_backend;
use policy_runtime::ReadPath;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("data");
    std::fs::create_dir_all(root.join("2024")).unwrap();
    let file = root.join("2024/jan.csv");
    std::fs::write(&file, b"date,amount\n2024-01-01,12\n2024-01-02,7\n").unwrap();
    let path = ReadPath::beneath(&root, &file);
    assert_eq!(path.read().unwrap(), std::fs::read(&file).unwrap());

    let mut group = c.benchmark_group("small_file_read");
    group.bench_function("std_fs_read", |b| {
        b.iter(|| std::fs::read(black_box(&file)).unwrap())
    });
    group.bench_function("read_path_read", |b| {
        b.iter(|| black_box(&path).read().unwrap())
    });
    group.bench_function("read_path_read_fresh_root", |b| {
        b.iter(|| ReadPath::beneath(&root, &file).read().unwrap())
    });
    group.bench_function("read_path_read_portable", |b| {
        with_portable_backend(|| b.iter(|| black_box(&path).read().unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
