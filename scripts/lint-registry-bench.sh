#!/usr/bin/env bash
# Runs toolpolicy-lint over every crate of the local cargo registry, each with a tool injected
# into every source file, and reports the time per crate (issue 18: no crate may take over the
# limit, none may crash or hang).
#
#   scripts/lint-registry-bench.sh [--limit SECONDS] [--timeout SECONDS] [REGISTRY_SRC_DIR...]
#
# Defaults: limit 2 s, hang timeout 60 s, every `~/.cargo/registry/src/*/` directory. The
# registry is never modified: each crate is copied to a temporary directory first. Writes a
# table (slowest first) to stdout and to $BENCH_OUT (default target/lint-registry-bench.tsv);
# exits 1 when a crate crashed, hung, took more CPU time than the limit, or its tool was not
# seen. The limit is on CPU time (user + system): wall time on a shared machine measures the
# load of others; both are in the table.
set -euo pipefail

limit=2
hang=60
dirs=()
while (($#)); do
    case "$1" in
        --limit) limit="$2"; shift 2 ;;
        --timeout) hang="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) dirs+=("$1"); shift ;;
    esac
done
if ((${#dirs[@]} == 0)); then
    dirs=("${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/)
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
cargo build --release --quiet -p manifest-verify --bin toolpolicy-lint --manifest-path "$root/Cargo.toml"
lint="$root/target/release/toolpolicy-lint"
out="${BENCH_OUT:-$root/target/lint-registry-bench.tsv}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The injected tool: declares only fs.read, writes a file, and calls a bare name that is
# defined nowhere, so that every module's imports and globs are searched for it.
inject() {
    local file="$1" n="$2"
    printf '\n#[tool(policy(fs.read = ["/data/**"]))]\nfn __toolpolicy_bench_%s() { __toolpolicy_bench_unknown(); std::fs::write("/tmp/x", b""); }\n' \
        "$n" >>"$file"
}

: >"$out.tmp"
for registry in "${dirs[@]}"; do
    for crate in "$registry"/*/; do
        crate="${crate%/}"
        [[ -f "$crate/Cargo.toml" ]] || continue
        name="$(basename "$crate")"
        copy="$work/$name"
        cp -r "$crate" "$copy"
        n=0
        while IFS= read -r -d '' file; do
            inject "$file" "$n"
            n=$((n + 1))
        done < <(find "$copy" -name '*.rs' -type f -print0)
        # CPU seconds (user + system) are the measure: on a shared machine the wall clock
        # mostly measures the other processes. Both are reported.
        set +e
        { TIMEFORMAT='%R %U %S'; time timeout "$hang" "$lint" "$copy" --format json \
            >"$work/report.json" 2>"$work/stderr"; } 2>"$work/time"
        status=$?
        set -e
        read -r wall user sys <"$work/time"
        seconds=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')
        summary=$(python3 - "$work/report.json" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    print(f"{r['tools']}\t{len(r['findings'])}\t{len(r['problems'])}")
except Exception:
    print("-\t-\t-")
EOF
)
        printf '%s\t%s\t%s\t%s\t%s\n' "$seconds" "$wall" "$status" "$name" "$summary" >>"$out.tmp"
        rm -rf "$copy"
    done
done

{
    printf 'cpu_s\twall_s\texit\tcrate\ttools\tfindings\tproblems\n'
    sort -t$'\t' -k1,1 -g -r "$out.tmp"
} >"$out"
rm -f "$out.tmp"
column -t -s$'\t' "$out" | awk 'NR <= 25'
total=$(($(wc -l <"$out") - 1))
bad=$(awk -F'\t' -v limit="$limit" 'NR > 1 && ($1 > limit || $3 > 2 || $5 == "-" || $5 == 0)' "$out")
echo "$total crates; report in $out"
if [[ -n "$bad" ]]; then
    echo "over ${limit}s, crashed (exit > 2), hung (exit 124) or tool not seen:"
    echo "$bad"
    exit 1
fi
echo "every crate within ${limit}s, no crash"
