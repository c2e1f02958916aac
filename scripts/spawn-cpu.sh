#!/usr/bin/env bash
# Whole-process CPU time (user + system, the process and every child it waited for) of
# `policy-sandbox run -- /bin/true` against `bwrap --unshare-all ... /bin/true` and a bare
# `/bin/true`, and of a strict and a hardened run with 500 declared roots against one with 1
# (each a whole process: a hardened one makes its scratch slot and ruleset once), over N runs
# each, interleaved round by round so that load from other processes on a shared machine hits
# every variant alike. Prints the mean CPU and wall time per run and the ratios the issue sets
# bars for.
#
#   scripts/spawn-cpu.sh [N] [BASELINE]   (default N = 200; builds the release binary first)
#
# BASELINE: another build of policy-sandbox (e.g. of an older commit) measured in the same
# rounds, for a before/after comparison from one run.
#
# CPU time is that of the whole process tree of each run: the script is a child subreaper
# (PR_SET_CHILD_SUBREAPER), so a descendant the command leaves behind is reparented to it and
# reaped, and its rusage counted too. This matters for bwrap: its outer process reads the exit
# status from an eventfd and exits without waiting for its child (pid 1 of the sandbox, which
# builds the mounts and waits for the command), so `wait4` of bwrap alone leaves out most of
# its work. Both figures are printed: "tree" (every process of the run) and "own" (what wait4
# of the started process returns). Neither counts the kernel's own worker threads (the
# asynchronous teardown of a network namespace), for every variant alike.
set -euo pipefail

n=${1:-200}
baseline=${2:-}
rounds=10
per_round=$(((n + rounds - 1) / rounds))
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build -q --release -p sandbox --bin policy-sandbox --manifest-path "$here/Cargo.toml"
sandbox="$here/target/release/policy-sandbox"
have_bwrap=1
if ! bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true 2>/dev/null; then
  echo "spawn-cpu: bwrap does not run here (sandbox/benches/install-bwrap.sh); skipping it" >&2
  have_bwrap=0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The spawn bench's tight policy: no network, no other programs, empty environment.
printf '{"net": "deny", "exec": "deny", "env": "deny"}\n' >"$work/policy.json"
# The same with 1 and with 500 declared read roots (directories of a temporary tree), as the
# bench's many-roots variants; here the whole command is measured, planning included.
mkdir -p "$work/roots"
for i in $(seq 0 499); do mkdir "$work/roots/r$i"; done
roots_policy() {
  local list
  list=$(seq 0 $(($1 - 1)) | sed "s|.*|\"$(realpath "$work/roots")/r&/**\"|" | paste -sd, -)
  printf '{"fs": {"read": [%s]}, "net": "deny", "exec": "deny", "env": "deny"}\n' "$list"
}
roots_policy 1 >"$work/roots1.json"
roots_policy 500 >"$work/roots500.json"

# Each run is started with posix_spawn and reaped with wait4, whose rusage is the run's own
# CPU time (user + system, with every child it waited for) at microsecond resolution; then
# every orphan of the run is reaped the same way and added.
python3 - "$n" "$rounds" "$work" "$sandbox" "$have_bwrap" "$baseline" <<'PY'
import os, sys, time
n, rounds, work, sandbox, have_bwrap = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5] == "1"
policy = f"{work}/policy.json"
baseline = os.path.abspath(sys.argv[6]) if sys.argv[6] else None
variants = {"true": ["/bin/true"]}
for label, build in [("", sandbox)] + ([(" (baseline)", baseline)] if baseline else []):
    variants["strict" + label] = [build, "run", "--policy", policy, "--", "/bin/true"]
    variants["hardened" + label] = [build, "run", "--profile", "hardened", "--policy", policy, "--", "/bin/true"]
    for roots in (1, 500):
        variants[f"strict, {roots} root{'s' if roots > 1 else ''}{label}"] = [build, "run", "--policy", f"{work}/roots{roots}.json", "--", "/bin/true"]
        variants[f"hardened, {roots} root{'s' if roots > 1 else ''}{label}"] = [build, "run", "--profile", "hardened", "--policy", f"{work}/roots{roots}.json", "--", "/bin/true"]
if have_bwrap:
    variants["bwrap"] = ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "/bin/true"]
import ctypes
PR_SET_CHILD_SUBREAPER = 36
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    sys.exit("spawn-cpu: cannot become a child subreaper: orphans of a run would go uncounted")
cpu = {v: [] for v in variants}
own = {v: [] for v in variants}
wall = {v: [] for v in variants}
null = os.open(os.devnull, os.O_RDWR)
per_round = max(1, n // rounds)
order = list(variants.items())
for r in range(rounds):
    # Every other round in the reverse order: a variant's place in the round (what ran just
    # before it, how warm the caches are) would otherwise favour some variants in every round.
    for name, argv in (order if r % 2 == 0 else order[::-1]):
        # One more run than counted, the first: a run leaves kernel work behind (RCU callbacks
        # that free its namespaces and mounts, 500 of them after a many-roots run), which is
        # charged to whatever runs next, so each block's first run pays for the previous
        # variant's. The spawn bench does the same.
        for i in range(per_round + 1):
            start = time.perf_counter()
            pid = os.posix_spawn(argv[0] if argv[0].startswith("/") else "/usr/bin/" + argv[0], argv, {}, file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])
            _, status, usage = os.wait4(pid, 0)
            elapsed = time.perf_counter() - start
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"spawn-cpu: {name} failed with status {status:#x}")
            mine = usage.ru_utime + usage.ru_stime
            tree = mine
            # Orphans of the run (bwrap's sandbox init, say) are now our children.
            while True:
                try:
                    _, _, usage = os.wait4(-1, 0)
                except ChildProcessError:
                    break
                tree += usage.ru_utime + usage.ru_stime
            if i == 0:
                continue
            wall[name].append(elapsed)
            own[name].append(mine)
            cpu[name].append(tree)
mean = lambda xs: sum(xs) / len(xs) * 1000
med = lambda xs: sorted(xs)[len(xs) // 2] * 1000
runs = per_round * rounds
print(f"per run over {runs} runs each, interleaved in {rounds} rounds (ms): CPU mean (user + sys) of the")
print("whole process tree (tree) and of what wait4 of the started process reports (own), wall median")
for name in variants:
    print(f"  {name:31} cpu tree {mean(cpu[name]):7.3f}  own {mean(own[name]):7.3f}  wall {med(wall[name]):7.3f}")
for label in [""] + ([" (baseline)"] if baseline else []):
    for profile in ("strict", "hardened"):
        one, many = cpu[f"{profile}, 1 root{label}"], cpu[f"{profile}, 500 roots{label}"]
        print(f"  {profile}{label}: 500 roots / 1 root: cpu {mean(many) / mean(one):.2f}")
    print(f"  hardened{label} / true: cpu {mean(cpu['hardened' + label]) / mean(cpu['true']):.2f}")
if have_bwrap:
    for name in [v for v in variants if v.startswith(("strict", "hardened")) and "root" not in v]:
        print(f"  policy-sandbox run ({name}) / bwrap: cpu (tree) {mean(cpu[name]) / mean(cpu['bwrap']):.2f}, cpu (own) {mean(own[name]) / mean(own['bwrap']):.2f}, wall {med(wall[name]) / med(wall['bwrap']):.2f}")
PY
