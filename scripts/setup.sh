#!/usr/bin/env bash
# Installs what the demo and the tests need on a Debian machine: the Rust toolchain (when cargo
# is missing), the few system tools the sandbox and egress tests drive, and the official MCP
# Python SDK, the real client of the MCP server's test.
set -euo pipefail

need=()
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v git >/dev/null 2>&1 || need+=(git)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v python3 >/dev/null 2>&1 || need+=(python3 python3-pip)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  echo "setup: installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: installing the Rust toolchain with rustup"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

# The MCP test's client (examples/tests/mcp_client.py). Debian's own python3 refuses a plain
# `pip install` (an externally managed environment), hence the second form.
if ! python3 -c 'import mcp' >/dev/null 2>&1; then
  echo "setup: installing the MCP Python SDK"
  pip_install=(python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore 'mcp>=2.3,<3')
  "${pip_install[@]}" >/dev/null 2>&1 || "${pip_install[@]}" --break-system-packages >/dev/null
fi
