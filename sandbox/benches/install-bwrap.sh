#!/bin/sh
# Installs bubblewrap for the `bwrap` comparison in benches/spawn.rs, then runs the benchmark.
#
#   sandbox/benches/install-bwrap.sh            install if missing, then `cargo bench --bench spawn`
#   sandbox/benches/install-bwrap.sh --no-bench install only
#
# Extra arguments after `--` go to criterion (e.g. `-- --measurement-time 3`).
set -eu

if command -v bwrap >/dev/null 2>&1; then
    echo "bwrap already installed: $(command -v bwrap)"
elif command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        SUDO=sudo
    else
        SUDO=
    fi
    echo "installing bubblewrap with apt-get"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bubblewrap
else
    echo "bwrap is missing and apt-get is not available; the bwrap benchmark will be skipped" >&2
fi

if [ "${1:-}" = "--no-bench" ]; then
    exit 0
fi
[ "${1:-}" = "--" ] && shift
cd "$(dirname "$0")/.."
exec cargo bench -p sandbox --bench spawn -- "$@"
