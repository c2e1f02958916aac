#!/usr/bin/env bash
# The main demo: a prompt-injected agent's tool calls against declared, enforced policies.
# Extra arguments go to the demo (e.g. --transcript my.json).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo run -q -p toolpolicy-examples --bin agent-demo -- "$@"
