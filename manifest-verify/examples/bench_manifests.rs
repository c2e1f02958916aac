//! Writes the two manifests of the benchmarks' `diff` shape to files, for measuring the
//! command line's memory (`scripts/verify-memory.sh`).
//!
//! `cargo run --example bench_manifests -- TOOLS DIR` writes `DIR/old.json` and `DIR/new.json`:
//! `TOOLS` tools each, every tenth tool changed in the new one.

#[path = "../benches/support/shape.rs"]
mod shape;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [tools, dir] = args.as_slice() else {
        eprintln!("usage: bench_manifests TOOLS DIR");
        std::process::exit(2);
    };
    let Ok(tools) = tools.parse::<usize>() else {
        eprintln!("TOOLS must be a number, got `{tools}`");
        std::process::exit(2);
    };
    let dir = std::path::Path::new(dir);
    for (name, new) in [("old.json", false), ("new.json", true)] {
        let text = shape::manifest_text(tools, 10, new, shape::Globs::Shared);
        if let Err(e) = std::fs::write(dir.join(name), text) {
            eprintln!("cannot write {}: {e}", dir.join(name).display());
            std::process::exit(2);
        }
    }
}
