#!/usr/bin/env bash
# Times toolpolicy-lint on a generated workspace of about 100,000 lines (issue 17's bar: < 1 s).
#
#   scripts/lint-bench-100k.sh [--crates N] [--modules M] [--keep DIR]
#
# `--keep DIR` writes the workspace to DIR and leaves it there.
#
# Generates, in a temporary directory (nothing is committed), a workspace of N member crates
# (default 10) that depend on each other by path, each with M modules (default 22) of about 500
# lines: structs, impls, traits with impls, `use` aliases and globs, helpers calling across
# modules and crates, `macro_rules!`, and annotated tools (one violating per module). Builds the
# release binary, then runs the lint three times and reports, from `/usr/bin/time -v`: wall
# time, CPU time (user + system) and peak RSS. On a shared machine the wall clock mostly
# measures the other processes' load: CPU time is the figure to compare with the bar.
set -euo pipefail

crates=10
modules=22
keep=""
while (($#)); do
    case "$1" in
        --crates) crates="$2"; shift 2 ;;
        --modules) modules="$2"; shift 2 ;;
        --keep) keep="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ -n "$keep" ]]; then
    work="$keep"
    mkdir -p "$work"
else
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
fi

# One block of about 100 lines; `$1` is the crate, `$2` the module, `$3` the block.
block() {
    local c="$1" m="$2" b="$3"
    cat <<RS
/// Records of kind ${b}.
#[derive(Clone, Debug, Default)]
pub struct Record${b} {
    pub name: String,
    pub path: PathBuf,
    pub size: u64,
    pub tags: Vec<String>,
}

impl Record${b} {
    pub fn new(name: &str) -> Self {
        Record${b} { name: name.to_string(), path: PathBuf::from(name), size: 0, tags: Vec::new() }
    }

    pub fn tagged(mut self, tag: &str) -> Self {
        self.tags.push(tag.to_string());
        self
    }

    pub fn describe(&self) -> String {
        format!("{} ({} bytes, {} tags)", self.name, self.size, self.tags.len())
    }

    pub fn weight(&self) -> u64 {
        self.tags.iter().map(|t| t.len() as u64).sum::<u64>() + self.size
    }
}

pub trait Store${b} {
    fn put(&self, r: &Record${b}) -> Result<(), String>;
    fn get(&self, name: &str) -> Option<Record${b}>;
}

pub struct Memory${b} {
    items: Vec<Record${b}>,
}

impl Store${b} for Memory${b} {
    fn put(&self, r: &Record${b}) -> Result<(), String> {
        if r.name.is_empty() {
            return Err("empty name".into());
        }
        Ok(())
    }

    fn get(&self, name: &str) -> Option<Record${b}> {
        self.items.iter().find(|r| r.name == name).cloned()
    }
}

pub fn load_${b}(p: &Path) -> Result<String, String> {
    fs::read_to_string(p).map_err(|e| e.to_string())
}

pub fn summarize_${b}(records: &[Record${b}]) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    for r in records {
        *out.entry(r.name.clone()).or_insert(0) += r.weight();
    }
    out
}

pub fn normalize_${b}(input: &str) -> String {
    let mut s = String::with_capacity(input.len());
    for (i, ch) in input.chars().enumerate() {
        if ch.is_alphanumeric() {
            s.push(ch.to_ascii_lowercase());
        } else if i > 0 && !s.ends_with('-') {
            s.push('-');
        }
    }
    s.trim_matches('-').to_string()
}

macro_rules! twice_${b} {
    (\$e:expr) => {
        (\$e, \$e)
    };
}

/// Reads a record.
#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
pub fn read_${c}_${m}_${b}(path: String) -> Result<String, String> {
    let text = load_${b}(Path::new(&path))?;
    let (a, _b) = twice_${b}!(normalize_${b}(&text));
    let r = Record${b}::new(&a).tagged("read");
    let store = Memory${b} { items: vec![r.clone()] };
    store.put(&r)?;
    Ok(super::m0::shared_helper(&r.describe()))
}

RS
}

gen_module() {
    local c="$1" m="$2" file="$3"
    {
        echo "//! Module ${m} of crate ${c}."
        echo "use std::collections::HashMap;"
        echo "use std::fs;"
        echo "use std::path::{Path, PathBuf};"
        echo "use policy_macros::tool;"
        if ((c > 0)); then echo "use bench_c$((c - 1))::m0 as upstream;"; fi
        echo
        echo "pub fn shared_helper(s: &str) -> String {"
        if ((c > 0)); then echo "    upstream::shared_helper(s)"; else echo "    s.to_uppercase()"; fi
        echo "}"
        echo
        for b in 0 1 2 3 4; do block "$c" "$m" "$b"; done
        # One violating tool per module: writes through a helper three calls away.
        echo "fn deep_write(p: &Path) { let _ = fs::write(p, b\"x\"); }"
        echo "fn middle(p: &Path) { deep_write(p) }"
        echo "#[tool(policy(fs.read = [\"/data/**\"]))]"
        echo "pub fn violate_${c}_${m}(path: String) -> Result<String, String> { middle(Path::new(&path)); Ok(path) }"
    } >"$file"
}

members=()
for ((c = 0; c < crates; c++)); do
    dir="$work/bench_c$c"
    mkdir -p "$dir/src"
    members+=("\"bench_c$c\"")
    {
        echo "[package]"
        echo "name = \"bench_c$c\""
        echo "version = \"0.1.0\""
        echo "edition = \"2021\""
        echo "[dependencies]"
        if ((c > 0)); then echo "bench_c$((c - 1)) = { path = \"../bench_c$((c - 1))\" }"; fi
    } >"$dir/Cargo.toml"
    {
        for ((m = 0; m < modules; m++)); do echo "pub mod m$m;"; done
    } >"$dir/src/lib.rs"
    for ((m = 0; m < modules; m++)); do gen_module "$c" "$m" "$dir/src/m$m.rs"; done
done
{
    echo "[workspace]"
    echo "resolver = \"2\""
    echo "members = [$(IFS=,; echo "${members[*]}")]"
} >"$work/Cargo.toml"

lines=$(find "$work" -name '*.rs' -exec cat {} + | wc -l)
bytes=$(find "$work" -name '*.rs' -exec cat {} + | wc -c)
echo "generated $crates crates x $modules modules: $lines lines, $bytes bytes of Rust in $work"

cargo build --release --quiet -p manifest-verify --bin toolpolicy-lint --manifest-path "$root/Cargo.toml"
lint="$root/target/release/toolpolicy-lint"

run() {
    local log="$work.time"
    set +e
    /usr/bin/time -v "$lint" "$work" --format json >"$work.out" 2>"$log"
    local code=$?
    set -e
    local wall user sys rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
    user=$(awk -F': ' '/User time/ {print $2}' "$log")
    sys=$(awk -F': ' '/System time/ {print $2}' "$log")
    rss=$(awk -F': ' '/Maximum resident/ {print $2}' "$log")
    echo "toolpolicy-lint: exit $code, wall $wall, user ${user}s, system ${sys}s, peak RSS ${rss} KiB"
}
for _ in 1 2 3; do run; done
violations=$(grep -c '"code": *"lint\.' "$work.out" || true)
echo "findings in the last run: $violations (expected $((crates * modules)))"
rm -f "$work.out" "$work.time"
