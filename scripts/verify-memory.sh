#!/usr/bin/env bash
# Peak memory (RSS) and time of `manifest-verify OLD NEW` on the benchmark's manifests (every
# tenth tool changed; see manifest-verify/benches/support/shape.rs) at several sizes, to show
# that memory grows linearly with the number of tools and stays under 1 GiB at 100,000.
#
#   scripts/verify-memory.sh [TOOLS...]        (default: 10000 50000 100000)
#
# Builds the command and the generator with the bench profile, writes each pair of manifests
# to a temporary directory, and runs the command under `/usr/bin/time -v`. Prints one row per
# size: peak RSS, KiB per tool, the manifests' size on disk, wall and CPU time. Exits 1 when a
# run fails (other than exit 1, "widened", which these manifests are) or a 100,000-tool run
# (or larger) peaks at 1 GiB or more.
set -euo pipefail

cd "$(dirname "$0")/.."
sizes=("$@")
((${#sizes[@]})) || sizes=(10000 50000 100000)
target="${CARGO_TARGET_DIR:-target}/release"

cargo build --quiet --profile bench -p manifest-verify --bin manifest-verify --example bench_manifests
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

status=0
printf '%8s %14s %12s %14s %8s %8s\n' tools "peak RSS MiB" "KiB/tool" "inputs MiB" "wall s" "CPU s"
for n in "${sizes[@]}"; do
    "$target/examples/bench_manifests" "$n" "$dir"
    code=0
    /usr/bin/time -v "$target/manifest-verify" "$dir/old.json" "$dir/new.json" --format json \
        >/dev/null 2>"$dir/time.txt" || code=$?
    if ((code != 1)); then
        echo "manifest-verify exited $code at $n tools (expected 1: the new manifest widens):" >&2
        cat "$dir/time.txt" >&2
        status=1
        continue
    fi
    kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt")
    user=$(awk -F': ' '/User time/ {print $2}' "$dir/time.txt")
    sys=$(awk -F': ' '/System time/ {print $2}' "$dir/time.txt")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$dir/time.txt")
    inputs=$(du -k -c "$dir/old.json" "$dir/new.json" | awk 'END {print $1}')
    awk -v n="$n" -v kib="$kib" -v inputs="$inputs" -v wall="$wall" -v user="$user" -v sys="$sys" 'BEGIN {
        # wall is [h:]mm:ss.ss
        k = split(wall, p, ":"); s = 0; for (i = 1; i <= k; i++) s = s * 60 + p[i];
        printf "%8d %14.1f %12.2f %14.1f %8.2f %8.2f\n", n, kib / 1024, kib / n, inputs / 1024, s, user + sys
    }'
    if ((n >= 100000 && kib >= 1048576)); then
        echo "peak RSS at $n tools is $((kib / 1024)) MiB, over the 1 GiB bar" >&2
        status=1
    fi
done
exit "$status"
