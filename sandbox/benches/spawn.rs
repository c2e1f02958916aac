//! What confinement costs: spawning and waiting for `/bin/true`, side by side.
//!
//! * `plain`: `std::process::Command` (posix_spawn);
//! * `hardened`: the runner's Landlock + seccomp profile, no namespaces (through the
//!   `policy-sandbox` trampoline);
//! * `strict`: the full strict profile (user, mount, pid, net namespaces + Landlock + seccomp),
//!   cloned straight into its namespaces;
//! * `strict_exec_allow`: the same with `exec = "allow"`, i.e. without exec supervision;
//! * `strict_net_allow`: the same with `net = "allow"`, i.e. without a network namespace;
//! * `bwrap`: `bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true`, skipped with
//!   a reason when bwrap is missing (`benches/install-bwrap.sh` installs it);
//! * `strict_1gib_parent`: the strict profile again, from a parent holding 1 GiB of touched heap;
//! * `fork_pre_exec_1gib_parent`: for contrast, a fork-based spawn (`Command` with a no-op
//!   `pre_exec`) from the same 1 GiB parent, the cost that sharing the address space avoids.
//!
//! After criterion, the same variants run round-robin and their medians and ratios are printed,
//! which is steadier than comparing separate criterion runs on a shared machine.
//!
//! Run: `cargo bench -p sandbox --bench spawn` (or `benches/install-bwrap.sh`).
//! Targets (issue 6): strict at most 3× plain and faster than bwrap; 1 GiB parent no slower.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{criterion_group, Criterion};
use policy_runtime::ToolPolicy;
use sandbox::{run, Profile, RunOptions};

const TRUE: &str = "/bin/true";

fn plain() {
    let status = Command::new(TRUE)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn /bin/true");
    assert!(status.success());
}

fn fork_pre_exec() {
    let mut command = Command::new(TRUE);
    // SAFETY: the hook does nothing; it only forces the fork path instead of posix_spawn.
    unsafe { command.pre_exec(|| Ok(())) };
    let status = command.status().expect("spawn /bin/true");
    assert!(status.success());
}

fn bwrap_available() -> bool {
    Command::new("bwrap")
        .args(BWRAP_ARGS)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

const BWRAP_ARGS: &[&str] = &[
    "--unshare-all",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    TRUE,
];

fn bwrap() {
    let status = Command::new("bwrap")
        .args(BWRAP_ARGS)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn bwrap");
    assert!(status.success());
}

/// A tight tool policy: no network, no other programs, empty environment, system read defaults.
const POLICY: &str = r#"{"net": "deny", "exec": "deny", "env": "deny"}"#;

/// The same with `exec = "allow"`: no exec supervision, to show what `exec = deny` costs.
const POLICY_EXEC_ALLOW: &str = r#"{"net": "deny", "exec": "allow", "env": "deny"}"#;

/// The same with `net = "allow"`: no network namespace, to show what creating (and the kernel's
/// asynchronous teardown of) a network namespace costs.
const POLICY_NET_ALLOW: &str = r#"{"net": "allow", "exec": "deny", "env": "deny"}"#;

/// Spawns `/bin/true` through the runner's library API, or explains why it cannot.
struct Sandboxed {
    policy: ToolPolicy,
    options: RunOptions,
    argv: Vec<OsString>,
}

impl Sandboxed {
    fn new(profile: Profile, policy: &str) -> Result<Sandboxed, String> {
        let policy = ToolPolicy::from_json_str("bench", policy).map_err(|e| e.to_string())?;
        let options = RunOptions::default()
            .profile(profile)
            .helper(env!("CARGO_BIN_EXE_policy-sandbox"));
        let sandboxed = Sandboxed {
            policy,
            options,
            argv: vec![TRUE.into()],
        };
        // One run up front: a refusal skips the bench instead of panicking inside it.
        sandboxed.try_once()?;
        Ok(sandboxed)
    }

    fn try_once(&self) -> Result<(), String> {
        let out = run(&self.policy, &self.argv, &self.options).map_err(|e| e.to_string())?;
        if out.success() {
            Ok(())
        } else {
            Err(format!(
                "/bin/true exited {:?}: {}",
                out.code,
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    fn spawn(&self) {
        if let Err(e) = self.try_once() {
            panic!("sandboxed /bin/true failed: {e}");
        }
    }
}

/// Allocates and touches `bytes` of heap, so a fork would have to copy its page tables.
fn touched_heap(bytes: usize) -> Vec<u8> {
    let mut heap = vec![0u8; bytes];
    for page in heap.chunks_mut(4096) {
        page[0] = 1;
    }
    std::hint::black_box(&mut heap);
    heap
}

fn spawn_benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("spawn_true");
    group.bench_function("plain", |b| b.iter(plain));
    if bwrap_available() {
        group.bench_function("bwrap", |b| b.iter(bwrap));
    } else {
        eprintln!(
            "skipped bench bwrap: `bwrap {}` does not run here; install bubblewrap \
             (sandbox/benches/install-bwrap.sh)",
            BWRAP_ARGS.join(" ")
        );
    }
    let mut strict = None;
    for (name, profile, policy) in [
        ("hardened", Profile::Hardened, POLICY),
        ("strict", Profile::Strict, POLICY),
        ("strict_exec_allow", Profile::Strict, POLICY_EXEC_ALLOW),
        ("strict_net_allow", Profile::Strict, POLICY_NET_ALLOW),
    ] {
        match Sandboxed::new(profile, policy) {
            Ok(sandboxed) => {
                group.bench_function(name, |b| b.iter(|| sandboxed.spawn()));
                if name == "strict" {
                    strict = Some(sandboxed);
                }
            }
            Err(why) => eprintln!("skipped bench {name}: the runner refused: {why}"),
        }
    }
    let heap = touched_heap(1 << 30);
    if let Some(sandboxed) = &strict {
        group.bench_function("strict_1gib_parent", |b| b.iter(|| sandboxed.spawn()));
    }
    group.bench_function("fork_pre_exec_1gib_parent", |b| b.iter(fork_pre_exec));
    drop(heap);
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    targets = spawn_benches
}

/// Median wall time of `f` over `samples` runs, in microseconds.
fn median_us(times: &mut [Duration]) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1e6
}

/// Runs the variants round-robin, so that load from other processes on a shared machine hits
/// all of them alike, and prints medians and the ratios the issue sets targets for.
fn interleaved_ratios(rounds: usize) {
    let hardened = Sandboxed::new(Profile::Hardened, POLICY).ok();
    let strict = match Sandboxed::new(Profile::Strict, POLICY) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("skipped interleaved ratios: the runner refused strict: {why}");
            return;
        }
    };
    let exec_allow = Sandboxed::new(Profile::Strict, POLICY_EXEC_ALLOW).ok();
    let net_allow = Sandboxed::new(Profile::Strict, POLICY_NET_ALLOW).ok();
    let has_bwrap = bwrap_available();
    let time = |f: &dyn Fn()| {
        let start = std::time::Instant::now();
        f();
        start.elapsed()
    };
    let (mut t_plain, mut t_hard, mut t_strict, mut t_bwrap) = (vec![], vec![], vec![], vec![]);
    let (mut t_exec_allow, mut t_net_allow) = (vec![], vec![]);
    for _ in 0..rounds {
        t_plain.push(time(&plain));
        if let Some(h) = &hardened {
            t_hard.push(time(&|| h.spawn()));
        }
        t_strict.push(time(&|| strict.spawn()));
        if has_bwrap {
            t_bwrap.push(time(&bwrap));
        }
        if let Some(e) = &exec_allow {
            t_exec_allow.push(time(&|| e.spawn()));
        }
        if let Some(n) = &net_allow {
            t_net_allow.push(time(&|| n.spawn()));
        }
    }
    // The 1 GiB parent cannot be interleaved spawn by spawn, so alternate phases instead, with
    // plain spawns in the same phases as a control for what holding 1 GiB does to the machine.
    let (mut t_small, mut t_big) = (vec![], vec![]);
    let (mut t_plain_small, mut t_plain_big) = (vec![], vec![]);
    for _ in 0..4 {
        for _ in 0..rounds / 4 {
            t_small.push(time(&|| strict.spawn()));
            t_plain_small.push(time(&plain));
        }
        let heap = touched_heap(1 << 30);
        for _ in 0..rounds / 4 {
            t_big.push(time(&|| strict.spawn()));
            t_plain_big.push(time(&plain));
        }
        drop(heap);
    }
    let plain_us = median_us(&mut t_plain);
    let strict_us = median_us(&mut t_strict);
    let small_us = median_us(&mut t_small);
    let big_us = median_us(&mut t_big);
    println!("interleaved medians over {rounds} rounds (µs):");
    println!("  plain {plain_us:.0}");
    if !t_hard.is_empty() {
        let hard_us = median_us(&mut t_hard);
        println!("  hardened {hard_us:.0} ({:.2}× plain)", hard_us / plain_us);
    }
    println!(
        "  strict {strict_us:.0} ({:.2}× plain)",
        strict_us / plain_us
    );
    if !t_bwrap.is_empty() {
        let bwrap_us = median_us(&mut t_bwrap);
        println!(
            "  bwrap {bwrap_us:.0} ({:.2}× plain; strict / bwrap = {:.2})",
            bwrap_us / plain_us,
            strict_us / bwrap_us
        );
    }
    for (name, times) in [
        ("strict, exec = allow", &mut t_exec_allow),
        ("strict, net = allow", &mut t_net_allow),
    ] {
        if !times.is_empty() {
            let us = median_us(times);
            println!("  {name} {us:.0} ({:.2}× plain)", us / plain_us);
        }
    }
    let plain_small_us = median_us(&mut t_plain_small);
    let plain_big_us = median_us(&mut t_plain_big);
    println!(
        "  strict in alternating phases: small parent {small_us:.0}, 1 GiB parent {big_us:.0} \
         (1 GiB / small = {:.2}; plain spawns in the same phases: {:.2})",
        big_us / small_us,
        plain_big_us / plain_small_us
    );
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    // `cargo test --benches` runs this binary without --bench: only smoke-test there.
    if std::env::args().any(|a| a == "--bench") {
        interleaved_ratios(200);
    }
}
