#!/usr/bin/env bash
# The main demo: a prompt-injected agent's tool calls against declared, enforced policies.
# Extra arguments go to the demo (e.g. --transcript my.json).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
# The first build compiles the workspace (a minute or two): cargo shows its progress; the
# run itself is quiet about building.
cargo build -p toolpolicy-examples --bin agent-demo
cargo run -q -p toolpolicy-examples --bin agent-demo -- "$@"
