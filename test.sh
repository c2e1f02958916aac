#!/usr/bin/env bash
# The test command: installs what the tests need, then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo test --workspace "$@"
