#!/usr/bin/env bash
# Runs one fuzz target for a number of minutes, in release mode, and prints its executions.
#
#   scripts/fuzz.sh TARGET [MINUTES]        (default: 5 minutes)
#   scripts/fuzz.sh all [MINUTES]           (each target in turn)
#
# Targets: manifest_loader, toml_loader, gate, glob_matchers (policy-runtime), inclusion
# (manifest-verify) and dsl (policy-macros' unit tests: the one DSL reader, as the attribute macro runs it). A failure prints the shrunk input and `FUZZ_SEED=...`; rerun with that
# variable set to replay the failing batch. `cargo test` runs each target for two seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${1:-}"
minutes="${2:-5}"
case "$minutes" in (*[!0-9]*|'') echo "MINUTES must be a whole number" >&2; exit 2;; esac

run() {
    local crate="$1" test="$2" filter="$3"
    # `lib`: a target among the crate's unit tests (it reads the crate's private parts).
    local where=(--test "$test")
    [ "$test" = lib ] && where=(--lib)
    FUZZ_SECONDS=$((minutes * 60)) cargo test --release -p "$crate" "${where[@]}" "$filter" \
        -- --exact --nocapture 2>&1 | grep -E '^fuzz |panicked|overflowed|fatal|signal|FUZZ_SEED|minimal failing|^test result'
}

one() {
    case "$1" in
        manifest_loader) run policy-runtime fuzz fuzz_manifest_loader ;;
        toml_loader) run policy-runtime fuzz fuzz_toml_loader ;;
        gate) run policy-runtime fuzz fuzz_gate ;;
        glob_matchers) run policy-runtime fuzz fuzz_glob_matchers_agree ;;
        inclusion) run manifest-verify inclusion_props fuzz_inclusion ;;
        dsl) run policy-macros lib dsl_fuzz::fuzz_dsl ;;
        *) echo "unknown target '$1': manifest_loader, toml_loader, gate, glob_matchers, inclusion, dsl or all" >&2; exit 2 ;;
    esac
}

if [ "$target" = all ]; then
    for t in manifest_loader toml_loader gate glob_matchers inclusion dsl; do one "$t"; done
else
    one "$target"
fi
