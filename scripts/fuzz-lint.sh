#!/usr/bin/env bash
# Fuzzes toolpolicy-lint's module walker and name resolver for MINUTES minutes (default 5) on
# the stable toolchain: generated crates of modules, imports and macros (see
# manifest-verify/tests/lint_fuzz.rs). Prints the number of executions; failing crates are
# saved under target/lint-fuzz-failures/ in the seed format of
# manifest-verify/tests/lint_fuzz_seeds/, where a fixed one belongs as a regression seed.
#
#   scripts/fuzz-lint.sh [MINUTES]      (CARGO_PROFILE_FLAG=--release for an optimised build)
set -euo pipefail
minutes="${1:-5}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
LINT_FUZZ_SECONDS=$((minutes * 60)) cargo test ${CARGO_PROFILE_FLAG:-} -p manifest-verify --test lint_fuzz \
    generated_module_trees_lint_cleanly -- --nocapture
