//! What confinement costs: spawning and waiting for `/bin/true`, side by side.
//!
//! * `plain`: `std::process::Command` (posix_spawn);
//! * in the interleaved ratios only, `plain, output captured`: the same with its output captured
//!   (`Command::output`), as `run` captures the command's; the hardened and strict lines also
//!   give their ratio to it;
//! * `hardened`: the runner's Landlock + seccomp profile, no namespaces (the command started and
//!   supervised by the `policy-sandbox` zygote, started once per process: its start is measured
//!   apart, as `hardened, first run in a process`);
//! * `strict`: the full strict profile (user, mount, pid, net namespaces + Landlock + seccomp),
//!   cloned straight into its namespaces;
//! * `strict_exec_allow`: the same with `exec = "allow"`, i.e. without exec supervision;
//! * `strict_net_allow`: the same with `net = "allow"`, i.e. without a network namespace (a root
//!   runner's `strict` joins one leased from its pool, [`sandbox::netns`]; others create one);
//! * `bwrap`: `bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true`, skipped with
//!   a reason when bwrap is missing (`benches/install-bwrap.sh` installs it); its whole process
//!   tree is counted, including the sandbox child that bwrap itself does not wait for (`bwrap()`);
//! * `strict_1gib_parent`: the strict profile again, from a parent holding 1 GiB of touched heap;
//! * `fork_pre_exec_1gib_parent`: for contrast, a fork-based spawn (`Command` with a no-op
//!   `pre_exec`) from the same 1 GiB parent, the cost that sharing the address space avoids.
//!
//! * `strict_500_roots` / `hardened_500_roots`: a policy declaring 500 read roots (directories
//!   of a temporary tree), against the same policy with one of them (`*_1_root`).
//!
//! After criterion, the same variants run round-robin, in blocks of a few runs each, and their
//! wall-clock medians, mean CPU times (see [`Times`]) and ratios are printed, which is steadier
//! than comparing separate criterion runs on a shared machine. Every `/bin/true` gets an empty
//! environment, as the sandboxed command does (see [`plain`]). Then the
//! floors: what the kernel alone charges for the pieces of a spawn (a `vfork`-style
//! `clone` + `execve` of `/bin/true` bare, in the strict profile's namespaces with and without
//! a network namespace, loading the strict seccomp filter, building a Landlock ruleset of 1 and
//! 500 path rules, all of strict's per-run mechanisms together, and the same in a view
//! namespace built once and leased to each run as a root runner's strict run is, see
//! `floors/leased_view.rs`, then the same supervised as the profile's properties need: the
//! runner's seccomp program with its listener passed to the caller, which lets the command's
//! `execve` through and serves the listener to the end, and the same with that `execve` sealed
//! by a per-run secret instead; with what the real 1-root strict run costs above those floors;
//! and the leased floor in a view held in a user namespace of its own, the design an
//! unprivileged runner's template takes, `sandbox/src/mounts/held.rs`),
//! interleaved with plain spawns in the same way; and, for 500 declared roots,
//! the floors of a strict view prepared once per policy (a bind tree cloned per run in one call,
//! a Landlock ruleset built once) beside the real 1- and 500-root strict runs, with the cost
//! per root each implies.
//!
//! Run: `cargo bench -p sandbox --bench spawn` (or `benches/install-bwrap.sh`); only the
//! interleaved ratios and floors: `cargo bench -p sandbox --bench spawn -- zzz_nomatch`.
//! Targets (issue 17): hardened and strict at most 1.5× plain, 500 roots at most 1.5× one.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{criterion_group, Criterion};

#[path = "../tests/support/raw_kernel.rs"]
mod raw;
use policy_runtime::ToolPolicy;
use sandbox::{run, Profile, RunOptions};

const TRUE: &str = "/bin/true";

/// The environment every variant's `/bin/true` gets is empty, as the sandbox gives the command
/// under `env = "deny"`: `cargo bench` sets `LD_LIBRARY_PATH`, and a program started with it
/// has its dynamic loader look for its libraries in each of those directories first, which
/// cost plain spawns about 0.25 ms here and made every ratio look better than it is.
fn plain() {
    quietly(&mut Command::new(TRUE));
}

/// Runs `command` with an empty environment and no input or output, and checks that it
/// succeeded.
fn quietly(command: &mut Command) {
    let status = command
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn the baseline");
    assert!(status.success());
}

/// [`plain`] with its output captured (`Command::output`: two pipes, read to their end), as
/// the runner's `run` captures its command's: the like-for-like baseline for a tool run. The
/// issue's bars are against [`plain`]; this line shows how much of a sandboxed run's cost is
/// the capture that any tool runner pays.
fn plain_output() {
    let out = Command::new(TRUE)
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .expect("spawn /bin/true");
    assert!(out.status.success());
}

/// A shell that writes a file, `file` (a host path), as a tool that writes `/tmp` does: the
/// baseline of the strict line whose shell writes `/tmp/x` and leaves it.
fn plain_sh_writing(file: &std::path::Path) {
    quietly(
        Command::new(SH)
            .arg("-c")
            .arg(format!("echo x > {}", file.display())),
    );
}

const SH: &str = "/bin/sh";

fn fork_pre_exec() {
    let mut command = Command::new(TRUE);
    command.env_clear();
    // SAFETY: the hook does nothing; it only forces the fork path instead of posix_spawn.
    unsafe { command.pre_exec(|| Ok(())) };
    let status = command.status().expect("spawn /bin/true");
    assert!(status.success());
}

fn bwrap_available() -> bool {
    bwrap_tree().is_ok()
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

/// Runs bwrap and waits for its whole tree. bwrap's outer process learns the exit status from
/// an eventfd and exits without waiting for its child (pid 1 of the sandbox, which builds the
/// mounts and waits for the command), so a plain `status()` would leave that child's CPU time
/// out of [`Times`]. The child's pid comes on `--info-fd`; the bench process is a child
/// subreaper ([`become_subreaper`]), so the orphan is reparented to it and reaped here, which
/// adds its CPU time to `RUSAGE_CHILDREN` like that of every other variant's processes.
fn bwrap() {
    if let Err(e) = bwrap_tree() {
        panic!("bwrap: {e}");
    }
}

fn bwrap_tree() -> Result<(), String> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors; the read end is close-on-exec, the write end is
    // inherited by bwrap (the bench starts no other process meanwhile).
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), 0) != 0 {
            return Err(format!("pipe: {}", std::io::Error::last_os_error()));
        }
        libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
    }
    let [read_end, write_end] = fds;
    let info_fd = write_end.to_string();
    let status = Command::new("bwrap")
        .env_clear()
        .args(["--info-fd", &info_fd])
        .args(BWRAP_ARGS)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    // SAFETY: our own descriptors, closed once; the read end becomes a File.
    let info = unsafe {
        libc::close(write_end);
        let mut file = <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(read_end);
        let mut info = String::new();
        let _ = std::io::Read::read_to_string(&mut file, &mut info);
        info
    };
    let status = status.map_err(|e| format!("cannot start bwrap: {e}"))?;
    // The sandbox child, if bwrap got as far as starting it, is ours to reap either way.
    let pid: Option<libc::pid_t> = info
        .split("\"child-pid\":")
        .nth(1)
        .and_then(|rest| {
            rest.trim_start()
                .split(|c: char| !c.is_ascii_digit())
                .next()
        })
        .and_then(|digits| digits.parse().ok());
    if let Some(pid) = pid {
        let mut child_status = 0;
        // SAFETY: waiting for our adopted child.
        let reaped = unsafe { libc::waitpid(pid, &mut child_status, 0) };
        if reaped != pid {
            return Err("bwrap's sandbox child was not reparented to the bench".into());
        }
    }
    match (status.success(), pid) {
        (true, Some(_)) => Ok(()),
        (true, None) => Err(format!("bwrap --info-fd gave no child-pid: {info:?}")),
        (false, _) => Err(format!("`bwrap {}` failed: {status}", BWRAP_ARGS.join(" "))),
    }
}

/// Makes this process a child subreaper: orphans of the processes it starts (bwrap's sandbox
/// child) become its children, so their CPU time can be counted when they are reaped.
fn become_subreaper() {
    // SAFETY: prctl with integers.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(rc, 0, "PR_SET_CHILD_SUBREAPER");
}

/// A tight tool policy: no network, no other programs, empty environment, system read defaults.
const POLICY: &str = r#"{"net": "deny", "exec": "deny", "env": "deny"}"#;

/// The same with `exec = "allow"`: no exec supervision, to show what `exec = deny` costs.
const POLICY_EXEC_ALLOW: &str = r#"{"net": "deny", "exec": "allow", "env": "deny"}"#;

/// The same with `net = "allow"`: no network namespace, to show what the namespace costs: joining
/// a leased one (root runner) or creating one and the kernel's asynchronous teardown of it.
const POLICY_NET_ALLOW: &str = r#"{"net": "allow", "exec": "deny", "env": "deny"}"#;

/// How many read roots the many-roots variants declare.
const MANY_ROOTS: usize = 500;

/// A temporary tree of [`MANY_ROOTS`] directories, and policies declaring `n` of them as read
/// roots (the tight policy otherwise).
struct RootTree {
    dir: tempfile::TempDir,
}

impl RootTree {
    fn new() -> RootTree {
        RootTree::new_in(&std::env::temp_dir())
    }

    /// The tree in `base`: in the temporary directory, the strict view's private `/tmp` holds
    /// the roots, whose rule covers theirs; elsewhere they share one rule on their parent.
    fn new_in(base: &std::path::Path) -> RootTree {
        let dir = tempfile::Builder::new()
            .prefix("toolpolicy-bench-roots-")
            .tempdir_in(base)
            .expect("temporary directory");
        for i in 0..MANY_ROOTS {
            std::fs::create_dir(dir.path().join(format!("r{i:03}"))).expect("root directory");
        }
        RootTree { dir }
    }

    fn policy(&self, n: usize) -> String {
        // The tree lives under the temporary directory, which may be reached through a
        // symlink: roots must name real paths.
        let base = std::fs::canonicalize(self.dir.path()).expect("canonical tree");
        let roots: Vec<String> = (0..n)
            .map(|i| format!("{:?}", format!("{}/r{i:03}/**", base.display())))
            .collect();
        format!(
            r#"{{"fs": {{"read": [{}]}}, "net": "deny", "exec": "deny", "env": "deny"}}"#,
            roots.join(", ")
        )
    }
}

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

    /// The same runs of `argv` instead of `/bin/true`.
    fn running(mut self, argv: &[&str]) -> Result<Sandboxed, String> {
        self.argv = argv.iter().map(OsString::from).collect();
        self.try_once()?;
        Ok(self)
    }

    fn try_once(&self) -> Result<(), String> {
        let out = run(&self.policy, &self.argv, &self.options).map_err(|e| e.to_string())?;
        if let Some(cpu) = out.helper_cpu {
            HELPER_CPU.fetch_add(cpu.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
        }
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
    let tree = RootTree::new();
    for (name, profile, n) in [
        ("strict_1_root", Profile::Strict, 1),
        ("strict_500_roots", Profile::Strict, MANY_ROOTS),
        ("hardened_1_root", Profile::Hardened, 1),
        ("hardened_500_roots", Profile::Hardened, MANY_ROOTS),
    ] {
        match Sandboxed::new(profile, &tree.policy(n)) {
            Ok(sandboxed) => {
                group.bench_function(name, |b| b.iter(|| sandboxed.spawn()));
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

/// CPU time the hardened runs reported for their helper processes
/// ([`sandbox::RunOutput::helper_cpu`]: the command and its orphans, which are the zygote's
/// children, not ours, and the zygote's own time on each run), in nanoseconds.
static HELPER_CPU: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Wall-clock and CPU times of repeated runs of one variant.
///
/// CPU time is this process's (every thread of the runner: the calling one and the
/// supervisor's) plus that of the children reaped meanwhile (the strict child, the hardened
/// zygote when it is shut down, bwrap and its adopted sandbox child, `/bin/true`) plus what
/// hardened runs report for the zygote's children ([`HELPER_CPU`]): what the spawn costs the
/// machine, which stays comparable when a shared machine is loaded and wall time is dominated
/// by waiting (the kernel's RCU grace periods when a namespace's mounts go away).
///
/// **Blocks, not single runs.** A spawn leaves kernel work behind that runs after it returns
/// (RCU callbacks that free its namespaces and mounts, charged to whichever task is on the CPU
/// then). Interleaved run by run, a sandboxed variant's leftovers were charged to the plain
/// spawn after it, which flattered the ratios (plain cost 0.86–0.94 ms there against
/// 0.54–0.73 ms alone). So each sample is a block of [`BLOCK`] runs of one variant whose first
/// run, which carries the previous variant's leftovers, is not counted: every counted run
/// carries its own variant's.
#[derive(Default)]
struct Times {
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
}

fn cpu_now() -> Duration {
    let total = |who: libc::c_int| {
        // SAFETY: getrusage fills a zeroed struct.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(who, &mut usage);
            usage
        };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        tv(usage.ru_utime) + tv(usage.ru_stime)
    };
    let helper = HELPER_CPU.load(std::sync::atomic::Ordering::Relaxed);
    total(libc::RUSAGE_SELF) + total(libc::RUSAGE_CHILDREN) + Duration::from_nanos(helper)
}

/// Runs per sample of a variant: the first absorbs what the previous variant left (see
/// [`Times`]), the others are measured.
const BLOCK: usize = 4;

impl Times {
    fn run(&mut self, f: &dyn Fn()) {
        f();
        for _ in 1..BLOCK {
            let (start, cpu) = (std::time::Instant::now(), cpu_now());
            f();
            self.wall.push(start.elapsed());
            self.cpu.push(cpu_now().saturating_sub(cpu));
        }
    }

    fn is_empty(&self) -> bool {
        self.wall.is_empty()
    }

    /// Median wall time and mean CPU time, in microseconds.
    fn us(&mut self) -> (f64, f64) {
        self.wall.sort();
        let wall = self.wall[self.wall.len() / 2].as_secs_f64() * 1e6;
        let cpu = self.cpu.iter().sum::<Duration>().as_secs_f64() * 1e6 / self.cpu.len() as f64;
        (wall, cpu)
    }
}

/// One line: wall and CPU, each with its ratio to `base` (plain).
fn line(name: &str, times: &mut Times, base: (f64, f64)) -> (f64, f64) {
    let (wall, cpu) = times.us();
    println!(
        "  {name}: wall {wall:.0} ({:.2}× plain), cpu {cpu:.0} ({:.2}× plain)",
        wall / base.0,
        cpu / base.1
    );
    (wall, cpu)
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
    // A tool that writes `/tmp` leaves its scratch dirty, which the runner empties after the
    // run; the same shell writing nothing, and a plain shell writing a host file, beside it.
    let sh = |script: &str| {
        Sandboxed::new(Profile::Strict, POLICY).and_then(|s| s.running(&[SH, "-c", script]))
    };
    let (sh_dirty, sh_tidy) = (sh("echo x > /tmp/x").ok(), sh("true").ok());
    let host_tmp = tempfile::tempdir().expect("a temporary directory");
    let host_file = host_tmp.path().join("x");
    let (mut t_sh_plain, mut t_sh_dirty, mut t_sh_tidy) = Default::default();
    let has_bwrap = bwrap_available();
    let (mut t_plain, mut t_hard, mut t_strict, mut t_bwrap) = Default::default();
    let (mut t_exec_allow, mut t_net_allow, mut t_output) = Default::default();
    let sample = |times: &mut Times, v: Option<&Sandboxed>| {
        if let Some(v) = v {
            times.run(&|| v.spawn());
        }
    };
    let helper_before = HELPER_CPU.load(std::sync::atomic::Ordering::Relaxed);
    for _ in 0..rounds {
        Times::run(&mut t_plain, &plain);
        Times::run(&mut t_output, &plain_output);
        sample(&mut t_hard, hardened.as_ref());
        sample(&mut t_strict, Some(&strict));
        if has_bwrap {
            Times::run(&mut t_bwrap, &bwrap);
        }
        sample(&mut t_exec_allow, exec_allow.as_ref());
        sample(&mut t_net_allow, net_allow.as_ref());
        if sh_dirty.is_some() {
            Times::run(&mut t_sh_plain, &|| plain_sh_writing(&host_file));
        }
        sample(&mut t_sh_dirty, sh_dirty.as_ref());
        sample(&mut t_sh_tidy, sh_tidy.as_ref());
    }
    // The zygote's start, once per process: a run that starts it, then its end (reaped, so its
    // CPU time is counted), against plain spawns in the same phase.
    let (mut t_first, mut t_plain_first) = (Times::default(), Times::default());
    let helper_per_run = (HELPER_CPU.load(std::sync::atomic::Ordering::Relaxed) - helper_before)
        as f64
        / 1e3
        / (rounds.max(1) * BLOCK) as f64;
    if let Some(h) = &hardened {
        // The zygote that served the runs above: its end (with every command it reaped)
        // must not count here.
        sandbox::zygote::shut_down();
        for _ in 0..rounds / 4 {
            t_plain_first.run(&plain);
            t_first.run(&|| {
                let reported = HELPER_CPU.load(std::sync::atomic::Ordering::Relaxed);
                h.spawn();
                // Reaping the zygote counts its children (the command) in
                // RUSAGE_CHILDREN: take back what the run reported, so nothing counts twice.
                sandbox::zygote::shut_down();
                let now = HELPER_CPU.load(std::sync::atomic::Ordering::Relaxed);
                HELPER_CPU.fetch_sub(now - reported, std::sync::atomic::Ordering::Relaxed);
            });
        }
    }
    // The 1 GiB parent cannot be interleaved spawn by spawn, so alternate phases instead, with
    // plain spawns in the same phases as a control for what holding 1 GiB does to the machine.
    let (mut t_small, mut t_big) = (Times::default(), Times::default());
    let (mut t_plain_small, mut t_plain_big) = (Times::default(), Times::default());
    for _ in 0..4 {
        for _ in 0..rounds / 4 {
            t_small.run(&|| strict.spawn());
            t_plain_small.run(&plain);
        }
        let heap = touched_heap(1 << 30);
        for _ in 0..rounds / 4 {
            t_big.run(&|| strict.spawn());
            t_plain_big.run(&plain);
        }
        drop(heap);
    }
    let base = t_plain.us();
    println!("interleaved over {rounds} rounds (µs; wall: median, cpu: mean):");
    println!("  plain: wall {:.0}, cpu {:.0}", base.0, base.1);
    let output = line(
        "plain, output captured (Command::output, as run captures it)",
        &mut t_output,
        base,
    );
    let t_hard: &mut Times = &mut t_hard;
    if !t_hard.is_empty() {
        let hard = line("hardened (zygote running)", t_hard, base);
        println!(
            "    against plain with output captured: wall {:.2}, cpu {:.2}",
            hard.0 / output.0,
            hard.1 / output.1
        );
        println!(
            "    of which in the helper processes (/bin/true, the zygote's share): \
             cpu {helper_per_run:.0} ({:.2}× plain)",
            helper_per_run / base.1
        );
        let first_base = t_plain_first.us();
        line(
            "hardened, first run in a process (zygote start + run + zygote end; once per process, \
             vs plain spawns of the same phase)",
            &mut t_first,
            first_base,
        );
    }
    let strict_us = line("strict", &mut t_strict, base);
    println!(
        "    against plain with output captured: wall {:.2}, cpu {:.2}",
        strict_us.0 / output.0,
        strict_us.1 / output.1
    );
    let t_bwrap: &mut Times = &mut t_bwrap;
    if !t_bwrap.is_empty() {
        let bwrap_us = line("bwrap", t_bwrap, base);
        println!(
            "  strict / bwrap: wall {:.2}, cpu {:.2}",
            strict_us.0 / bwrap_us.0,
            strict_us.1 / bwrap_us.1
        );
    }
    for (name, times) in [
        ("strict, exec = allow", &mut t_exec_allow),
        ("strict, net = allow", &mut t_net_allow),
    ] {
        let times: &mut Times = times;
        if !times.is_empty() {
            line(name, times, base);
        }
    }
    if !t_sh_dirty.is_empty() {
        let sh_base = t_sh_plain.us();
        println!(
            "  plain sh writing a host file: wall {:.0}, cpu {:.0}",
            sh_base.0, sh_base.1
        );
        let lines: [(&str, &mut Times); 2] = [
            (
                "strict, sh writing /tmp/x and leaving it (× is of plain sh writing a file)",
                &mut t_sh_dirty,
            ),
            (
                "strict, sh -c true (× is of plain sh writing a file)",
                &mut t_sh_tidy,
            ),
        ];
        for (name, times) in lines {
            if !times.is_empty() {
                line(name, times, sh_base);
            }
        }
    }
    let (small, big) = (t_small.us(), t_big.us());
    let (plain_small, plain_big) = (t_plain_small.us(), t_plain_big.us());
    println!(
        "  strict in alternating phases: small parent {:.0}, 1 GiB parent {:.0} \
         (1 GiB / small = {:.2}; plain spawns in the same phases: {:.2})",
        small.0,
        big.0,
        big.0 / small.0,
        plain_big.0 / plain_small.0
    );
}

/// Declared roots: 1 against [`MANY_ROOTS`], round-robin, in both profiles.
fn interleaved_roots(rounds: usize) {
    let tree = RootTree::new();
    let outside = RootTree::new_in(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")));
    let mut pairs = Vec::new();
    for (name, profile, tree) in [
        ("strict", Profile::Strict, &tree),
        ("hardened", Profile::Hardened, &tree),
        ("strict, roots outside /tmp", Profile::Strict, &outside),
    ] {
        match (
            Sandboxed::new(profile, &tree.policy(1)),
            Sandboxed::new(profile, &tree.policy(MANY_ROOTS)),
        ) {
            (Ok(one), Ok(many)) => pairs.push((name, one, many)),
            (Err(why), _) | (_, Err(why)) => {
                eprintln!("skipped {name} with {MANY_ROOTS} roots: the runner refused: {why}")
            }
        }
    }
    let mut times: Vec<(Times, Times)> = pairs.iter().map(|_| Default::default()).collect();
    let mut t_plain = Times::default();
    for _ in 0..rounds {
        t_plain.run(&plain);
        for ((_, one, many), (t_one, t_many)) in pairs.iter().zip(&mut times) {
            t_one.run(&|| one.spawn());
            t_many.run(&|| many.spawn());
        }
    }
    let base = t_plain.us();
    println!("declared read roots, interleaved over {rounds} rounds (µs):");
    println!("  plain: wall {:.0}, cpu {:.0}", base.0, base.1);
    for ((name, _, _), (t_one, t_many)) in pairs.iter().zip(&mut times) {
        let one = line(&format!("{name}, 1 root"), t_one, base);
        let many = line(&format!("{name}, {MANY_ROOTS} roots"), t_many, base);
        println!(
            "  {name}: {MANY_ROOTS} roots / 1 root: wall {:.2}, cpu {:.2}",
            many.0 / one.0,
            many.1 / one.1
        );
    }
}

/// Writes the maps of the new user namespace of `/proc/<pid>` (`self`: this process's): `uid`
/// and `gid`, read before that namespace was made (inside it, unmapped, they read as the
/// overflow ids), are root there. Whether all three writes succeeded.
fn map_as_root(pid: &str, (uid, gid): (libc::uid_t, libc::gid_t)) -> bool {
    [
        ("setgroups", "deny".to_string()),
        ("uid_map", format!("0 {uid} 1")),
        ("gid_map", format!("0 {gid} 1")),
    ]
    .iter()
    .all(|(file, map)| std::fs::write(format!("/proc/{pid}/{file}"), map).is_ok())
}

/// Declared roots, 1 against [`MANY_ROOTS`], for a strict runner without `CAP_SYS_ADMIN` over
/// its mount namespace (its template held in a user namespace it makes,
/// `sandbox/src/mounts/held.rs`): in a forked child that is root in a user namespace of its
/// own but still in the host's mount namespace, as a test's unprivileged runner is.
fn interleaved_roots_held(rounds: usize) {
    let tree = RootTree::new();
    // SAFETY: the child runs only this function's code, then exits without unwinding.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        eprintln!(
            "skipped the held-template roots: fork: {}",
            std::io::Error::last_os_error()
        );
        return;
    }
    if pid > 0 {
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        return;
    }
    // SAFETY: getters without pointers; unshare in this one-threaded child.
    let ids = unsafe { (libc::geteuid(), libc::getegid()) };
    let entered = unsafe { libc::unshare(libc::CLONE_NEWUSER) } == 0 && map_as_root("self", ids);
    let pair = match (
        entered,
        Sandboxed::new(Profile::Strict, &tree.policy(1)),
        Sandboxed::new(Profile::Strict, &tree.policy(MANY_ROOTS)),
    ) {
        (false, _, _) => Err("no user namespace of its own".to_string()),
        (true, Ok(one), Ok(many)) => Ok((one, many)),
        (true, Err(why), _) | (true, _, Err(why)) => Err(why),
    };
    match pair {
        Err(why) => eprintln!("skipped the held-template roots: {why}"),
        Ok((one, many)) => {
            let (mut t_one, mut t_many, mut t_plain) = Default::default();
            for _ in 0..rounds {
                Times::run(&mut t_plain, &plain);
                Times::run(&mut t_one, &|| one.spawn());
                Times::run(&mut t_many, &|| many.spawn());
            }
            let base = t_plain.us();
            println!(
                "declared read roots, strict runner without CAP_SYS_ADMIN over its mounts \
                 (held template), interleaved over {rounds} rounds (µs):"
            );
            println!("  plain: wall {:.0}, cpu {:.0}", base.0, base.1);
            let a = line("strict held, 1 root", &mut t_one, base);
            let b = line(
                &format!("strict held, {MANY_ROOTS} roots"),
                &mut t_many,
                base,
            );
            println!(
                "  strict held: {MANY_ROOTS} roots / 1 root: wall {:.2}, cpu {:.2}",
                b.0 / a.0,
                b.1 / a.1
            );
        }
    }
    let _ = std::io::Write::flush(&mut std::io::stdout());
    // SAFETY: ends the forked child without running the parent's exit handlers.
    unsafe { libc::_exit(0) }
}

fn main() {
    become_subreaper();
    benches();
    Criterion::default().configure_from_args().final_summary();
    // `cargo test --benches` runs this binary without --bench: only smoke-test there.
    if std::env::args().any(|a| a == "--bench") {
        interleaved_ratios(200);
        interleaved_roots(100);
        interleaved_roots_held(100);
        floors::print(200);
        hardened_floors(200);
    }
}

/// What a hardened run pays beyond its command's own confinement (whose floors are the
/// `clone + execve`, seccomp and Landlock lines of [`floors`]), interleaved with plain spawns:
/// the zygote's round trip without a command (the run's channels, the start of a process that
/// shares the zygote's memory, its pidfd, its end, the group kill, the report), and the
/// private scratch directory a hardened run gets as `$TMPDIR` (made once per scratch slot and
/// reused, emptied, by the later runs of the policy; see `sandbox/src/slots.rs`).
fn hardened_floors(rounds: usize) {
    let helper = std::path::Path::new(env!("CARGO_BIN_EXE_policy-sandbox"));
    if let Err(e) = sandbox::zygote::floor_round_trip(helper) {
        eprintln!("skipped hardened floors: {e}");
        return;
    }
    let round_trip = || {
        let cpu = sandbox::zygote::floor_round_trip(helper).expect("zygote round trip");
        HELPER_CPU.fetch_add(cpu.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
    };
    let scratch = || {
        let dir = tempfile::Builder::new()
            .prefix("toolpolicy-bench-scratch-")
            .tempdir()
            .expect("scratch directory");
        std::hint::black_box(std::fs::canonicalize(dir.path()).expect("canonical"));
    };
    let (mut t_plain, mut t_trip, mut t_scratch) = Default::default();
    for _ in 0..rounds {
        Times::run(&mut t_plain, &plain);
        Times::run(&mut t_trip, &round_trip);
        Times::run(&mut t_scratch, &scratch);
    }
    let base = t_plain.us();
    println!("hardened floors, interleaved over {rounds} rounds (µs):");
    println!("  plain: wall {:.0}, cpu {:.0}", base.0, base.1);
    line(
        "the zygote's round trip, no command (channels, the command process's start and end, report)",
        &mut t_trip,
        base,
    );
    line(
        "a private scratch directory created, resolved and removed ($TMPDIR; once per slot)",
        &mut t_scratch,
        base,
    );
}

/// What the kernel alone charges for the pieces of a sandboxed spawn: the floor under each
/// profile's cost, measured the way the runner pays it.
mod floors {
    use std::cell::Cell;
    use std::ffi::{CStr, CString};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

    use super::raw;

    use super::Times;

    use sandbox::landlock_rules::{LandlockSpec, PathRule};
    use sandbox::seccomp::{self, FilterOptions};

    #[path = "../floors/leased_view.rs"]
    mod leased_view;
    // The runner's own descriptor passing, for the supervised floor's listener (the bench
    // uses two of its functions).
    #[path = "../../src/fdpass.rs"]
    #[allow(dead_code, unused_imports)]
    mod fdpass;
    use leased_view::{LeasedView, Variant};

    /// What the cloned child does before it executes `/bin/true`.
    enum Work {
        Nothing,
        Seccomp(Vec<libc::sock_filter>),
        Landlock(LandlockSpec),
        /// Bind each directory onto itself (in the child's own mount namespace).
        Binds(Vec<CString>),
        /// Move a clone of a bind tree built once ([`BindTree`]) onto a directory: the parent
        /// clones it per run before the `clone` (a detached tree cannot be cloned from inside
        /// the new mount namespace), the child moves the copy into its own namespace.
        Tree(BindTree),
        /// Enforce a Landlock ruleset built once ([`PrebuiltRuleset`]).
        Ruleset(PrebuiltRuleset),
        /// Every mechanism a strict run applies per run, with nothing of the runner around it
        /// ([`Mechanisms`]).
        Strict(Mechanisms),
        /// The same in a view namespace built once, as a root runner's strict run leases one
        /// ([`LeasedView`]).
        Leased(LeasedView),
    }

    /// What a strict child does besides building its view, in its new user, mount, pid and IPC
    /// namespaces: its uid and gid maps, a fresh `/proc`, a devpts instance and a sized
    /// scratch tmpfs (on three directories of the child's private mount namespace), its
    /// capabilities dropped, NO_NEW_PRIVS, the strict seccomp filter and a Landlock ruleset.
    /// The floor under a strict run's cost, whatever the runner does around it.
    pub(super) struct Mechanisms {
        maps: [(CString, CString); 3],
        targets: [CString; 3],
        filter: Vec<libc::sock_filter>,
        landlock: LandlockSpec,
    }

    impl Mechanisms {
        /// In the child; false on the first step that fails.
        fn apply(&self) -> bool {
            // SAFETY: raw system calls on C strings and integers owned by `self`.
            unsafe {
                if !write_maps(libc::AT_FDCWD, &self.maps) {
                    return false;
                }
                let [proc, pts, tmp] = &self.targets;
                let mounts: [(&CStr, &CStr, libc::c_ulong, &CStr); 3] = [
                    (c"proc", proc, PROC_FLAGS, c""),
                    (c"devpts", pts, DEVPTS_FLAGS, DEVPTS_DATA),
                    (
                        c"tmpfs",
                        tmp,
                        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        c"mode=1777,size=1073741824",
                    ),
                ];
                for (fs, target, flags, data) in mounts {
                    let data = if data.is_empty() {
                        std::ptr::null()
                    } else {
                        data.as_ptr().cast()
                    };
                    if libc::mount(fs.as_ptr(), target.as_ptr(), fs.as_ptr(), flags, data) != 0 {
                        return false;
                    }
                }
            }
            confine(&self.landlock, &self.filter)
        }
    }

    /// The runner's strict program for `net = deny`, `exec = deny` (the bench's policy):
    /// `execve` and `connect` go to the listener.
    fn supervised_filter() -> Vec<libc::sock_filter> {
        let program = seccomp::compile(FilterOptions {
            exec_notify: true,
            restrict_socket_families: true,
            supervise_unix: true,
            ..FilterOptions::default()
        })
        .expect("the strict filter compiles");
        seccomp::unpack(&program.program)
    }

    /// The same rules split as the hardened command's are: a program that sends `connect` to
    /// the listener and lets `execve` through, and a tail that admits only the `execve` that
    /// carries the run's secret (it also refuses `setpgid` and `setsid`, two instructions a
    /// strict tail would not need).
    fn sealed_filters() -> (Vec<libc::sock_filter>, Vec<libc::sock_filter>) {
        let filters = seccomp::compile(FilterOptions {
            exec_notify: true,
            restrict_socket_families: true,
            supervise_unix: true,
            keep_process_group: true,
            ..FilterOptions::default()
        })
        .expect("the strict filter compiles");
        (
            seccomp::unpack(&filters.program),
            seccomp::unpack(&filters.tail),
        )
    }

    /// The strict child's `/proc`: read-only, no set-id, devices or programs.
    const PROC_FLAGS: libc::c_ulong =
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY;
    /// The strict child's devpts instance.
    const DEVPTS_FLAGS: libc::c_ulong = libc::MS_NOSUID | libc::MS_NOEXEC;
    const DEVPTS_DATA: &CStr = c"newinstance,ptmxmode=0666,mode=0620,max=64";

    /// Writes each `(file, content)` of `maps` (`setgroups`, `uid_map`, `gid_map`), named
    /// relative to the directory open at `at`; allocates nothing.
    fn write_maps(at: libc::c_int, maps: &[(CString, CString)]) -> bool {
        maps.iter().all(|(file, content)| {
            let bytes = content.as_bytes();
            // SAFETY: openat with a C string, a write of a live buffer, closing our descriptor.
            unsafe {
                let fd = libc::openat(at, file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                let ok = fd >= 0
                    && libc::write(fd, bytes.as_ptr().cast(), bytes.len()) == bytes.len() as isize;
                libc::close(fd);
                ok
            }
        })
    }

    /// As the strict child: no capability, then the Landlock rules and the seccomp filter.
    fn confine(landlock: &LandlockSpec, filter: &[libc::sock_filter]) -> bool {
        no_capabilities()
            && sandbox::landlock_rules::restrict_self(landlock).is_ok()
            && seccomp::install(filter, false).is_ok()
    }

    /// As the strict child, which keeps the bounding set its user namespace starts with: no
    /// permitted capability, then NO_NEW_PRIVS.
    fn no_capabilities() -> bool {
        let header = [0x2008_0522u32, 0];
        let data = [0u32; 6];
        // SAFETY: capset with a valid header and data; prctl with integers.
        unsafe {
            libc::syscall(libc::SYS_capset, header.as_ptr(), data.as_ptr()) == 0
                && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
        }
    }

    struct Child {
        program: CString,
        argv: [*const libc::c_char; 2],
        envp: [*const libc::c_char; 1],
        work: Work,
    }

    extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the Child that `spawn` keeps alive while the parent is suspended
        // (CLONE_VFORK); the child only confines itself and executes.
        unsafe {
            let c = &*(arg as *const Child);
            match &c.work {
                Work::Nothing => {}
                Work::Seccomp(program) => {
                    libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                    if seccomp::install(program, false).is_err() {
                        libc::_exit(126);
                    }
                }
                Work::Landlock(spec) => {
                    libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                    if sandbox::landlock_rules::restrict_self(spec).is_err() {
                        libc::_exit(126);
                    }
                }
                Work::Tree(tree) => {
                    if !tree.attach_copy() {
                        libc::_exit(126);
                    }
                }
                Work::Ruleset(ruleset) => {
                    if !ruleset.enforce() {
                        libc::_exit(126);
                    }
                }
                Work::Strict(mechanisms) => {
                    if !mechanisms.apply() {
                        libc::_exit(126);
                    }
                }
                Work::Leased(view) => {
                    if view.first_of_two() {
                        // The held view's first child: its second does the rest.
                        let ok = view.start_second(child, arg);
                        libc::_exit(if ok { 0 } else { 126 });
                    }
                    if !view.apply() {
                        libc::_exit(126);
                    }
                }
                Work::Binds(dirs) => {
                    for dir in dirs {
                        let flags = libc::MS_BIND | libc::MS_REC;
                        let (p, null) = (dir.as_ptr(), std::ptr::null());
                        if libc::mount(p, p, null, flags, std::ptr::null()) != 0 {
                            libc::_exit(126);
                        }
                    }
                }
            }
            match &c.work {
                // The sealed tail admits only this call, by the registers `execve` does not
                // read.
                Work::Leased(view) if view.exec_registers().is_some() => {
                    let registers = view.exec_registers().unwrap_or_default();
                    seccomp::execve_sealed(
                        c.program.as_ptr(),
                        c.argv.as_ptr(),
                        c.envp.as_ptr(),
                        registers,
                    );
                }
                _ => {
                    libc::execve(c.program.as_ptr(), c.argv.as_ptr(), c.envp.as_ptr());
                }
            }
            libc::_exit(127)
        }
    }

    /// `clone(CLONE_VM | CLONE_VFORK | flags)` (what `posix_spawn` does, plus namespaces), the
    /// child's `work`, `execve("/bin/true")`, wait.
    fn spawn(flags: libc::c_int, work: &Child, stack: &mut [u8]) {
        if let Work::Leased(view) = &work.work {
            if view.is_supervised() {
                let arg = (work as *const Child).cast_mut().cast();
                // SAFETY: `work` and `stack` outlive the call, which reaps the child; the
                // child makes only system calls.
                let ok = unsafe { view.spawn_supervised(child, arg, flags, stack) };
                assert!(ok, "floor child failed");
                return;
            }
        }
        // SAFETY: the child runs on `stack` with `work`, both alive until it executed (the
        // parent is suspended until then: CLONE_VFORK).
        if let Work::Tree(tree) = &work.work {
            tree.copy_for_run();
        }
        unsafe {
            let top = stack.as_mut_ptr().add(stack.len() & !15).cast();
            let pid = libc::clone(
                child,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD | flags,
                (work as *const Child).cast_mut().cast(),
            );
            assert!(pid > 0, "clone: {}", std::io::Error::last_os_error());
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "floor child failed: {status:#x}"
            );
            if let Work::Leased(view) = &work.work {
                if let Some(second) = view.second_child() {
                    assert!(second > 0, "the held view's second child did not start");
                    libc::waitpid(second, &mut status, 0);
                    assert!(
                        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                        "the held view's second child failed: {status:#x}"
                    );
                }
            }
        }
        if let Work::Tree(tree) = &work.work {
            // The copy's teardown, as a run's: the child's namespace is gone, ours is the
            // last reference.
            tree.drop_copy();
        }
    }

    /// A tree of binds built once ([`raw::bind_tree`]), cloned whole in one call per run
    /// ([`BindTree::copy_for_run`]) and attached at `target` in the run's namespace.
    pub(super) struct BindTree {
        tree: OwnedFd,
        target: CString,
        copy: Cell<RawFd>,
    }

    impl BindTree {
        /// Builds the tree of binds of `dirs`, to be attached at `target` in each run.
        fn build(dirs: &[CString], target: CString) -> Result<BindTree, String> {
            let names: Vec<CString> = (0..dirs.len())
                .map(|i| CString::new(format!("b{i}")).expect("no NUL"))
                .collect();
            let binds: Vec<(&CStr, &CStr)> = dirs
                .iter()
                .zip(&names)
                .map(|(d, n)| (d.as_c_str(), n.as_c_str()))
                .collect();
            let tree = raw::bind_tree(&binds)
                .map_err(|step| format!("{step}: {}", std::io::Error::last_os_error()))?;
            Ok(BindTree {
                // SAFETY: bind_tree made the descriptor; it is ours.
                tree: unsafe { OwnedFd::from_raw_fd(tree) },
                target,
                copy: Cell::new(-1),
            })
        }

        /// In the parent, before the child's `clone`: one recursive clone of the whole tree.
        fn copy_for_run(&self) {
            let flags = libc::AT_EMPTY_PATH | libc::AT_RECURSIVE;
            let copy = raw::clone_tree(self.tree.as_raw_fd(), c"", flags);
            assert!(
                copy >= 0,
                "clone the bind tree: {}",
                std::io::Error::last_os_error()
            );
            self.copy.set(copy);
        }

        /// In the child, in its new namespaces: attaches the copy at the target.
        fn attach_copy(&self) -> bool {
            raw::attach(self.copy.get(), libc::AT_FDCWD, &self.target)
        }

        fn drop_copy(&self) {
            // SAFETY: the copy's descriptor, ours since `copy_for_run`, closed once.
            unsafe { libc::close(self.copy.replace(-1)) };
        }
    }

    /// A Landlock ruleset built once (from descriptors, the way the strict child makes its
    /// rules), enforced per run: what a cached ruleset would cost a run.
    pub(super) struct PrebuiltRuleset(OwnedFd);

    impl PrebuiltRuleset {
        /// The filesystem rights of ABI `abi` handled; read and execute beneath `/usr` and
        /// `/etc`, read beneath each of `roots`.
        fn build(abi: i32, roots: &[std::path::PathBuf]) -> std::io::Result<PrebuiltRuleset> {
            let (read, exec) = (raw::READ_FILE | raw::READ_DIR, raw::EXECUTE);
            let system = ["/usr", "/etc"].map(|p| (std::path::PathBuf::from(p), read | exec));
            let rules = system
                .into_iter()
                .chain(roots.iter().map(|r| (r.clone(), read)));
            let fd = raw::create_ruleset(raw::all_fs_rights(abi));
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: create_ruleset made the descriptor; it is ours.
            let ruleset = unsafe { OwnedFd::from_raw_fd(fd) };
            for (path, access) in rules {
                let dir = std::fs::File::open(&path)?;
                if !raw::add_rule(fd, dir.as_raw_fd(), access) {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(PrebuiltRuleset(ruleset))
        }

        /// In the child: NO_NEW_PRIVS, then the ruleset.
        fn enforce(&self) -> bool {
            raw::restrict_self(self.0.as_raw_fd())
        }
    }

    /// Starts the helper binary as a zygote with no control socket: it loads, finds nothing on
    /// its control descriptor and exits with the refusal status. What the first hardened run
    /// of a process pays once (later runs fork the zygote instead).
    fn helper_start() {
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_policy-sandbox"))
            .arg(sandbox::trampoline::SUBCOMMAND)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("start policy-sandbox");
        assert_eq!(status.code(), Some(sandbox::trampoline::REFUSED_EXIT));
    }

    pub fn print(rounds: usize) {
        let program = CString::new(super::TRUE).expect("no NUL");
        let make = |work: Work| Child {
            argv: [program.as_ptr(), std::ptr::null()],
            envp: [std::ptr::null()],
            program: program.clone(),
            work,
        };
        let filter = seccomp::compile(FilterOptions {
            exec_notify: false,
            deny_sockets: false,
            restrict_socket_families: true,
            deny_memfd: false,
            shares_host_namespaces: false,
            deny_metadata_writes: false,
            supervise_unix: false,
            keep_process_group: false,
            relay_execs: false,
        })
        .expect("the strict filter compiles");
        let tree = super::RootTree::new();
        let landlock_spec = |n: usize| {
            let base = std::fs::canonicalize(tree.dir.path()).expect("canonical tree");
            // /usr and /etc, so that /bin/true and its loader can run, then the roots.
            let system = ["/usr", "/etc"].map(|p| PathRule {
                path: p.into(),
                read: true,
                write: false,
                exec: true,
                optional: false,
            });
            let roots = (0..n).map(|i| PathRule {
                path: base.join(format!("r{i:03}")),
                read: true,
                write: false,
                exec: false,
                optional: false,
            });
            LandlockSpec {
                abi: sandbox::landlock_rules::negotiated_abi(sandbox::hostcaps::landlock_abi()),
                paths: system.into_iter().chain(roots).collect(),
                restrict_connect: true,
                connect_ports: Vec::new(),
                bind_ports: Vec::new(),
                unix_connect_beneath: None,
            }
        };
        let landlock = |n: usize| Work::Landlock(landlock_spec(n));
        let namespaces =
            libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
        let binds = |n: usize| {
            let base = std::fs::canonicalize(tree.dir.path()).expect("canonical tree");
            let dirs = (0..n).map(|i| {
                let dir = base.join(format!("r{i:03}")).into_os_string();
                CString::new(dir.into_encoded_bytes()).expect("no NUL")
            });
            Work::Binds(dirs.collect())
        };
        let mut variants: Vec<(&str, libc::c_int, Child)> = vec![
            (BARE, 0, make(Work::Nothing)),
            (
                "+ user, mount, pid, IPC namespaces",
                namespaces,
                make(Work::Nothing),
            ),
            (
                "+ user, mount, pid, IPC, net namespaces",
                namespaces | libc::CLONE_NEWNET,
                make(Work::Nothing),
            ),
            // What the IPC namespace alone costs (its sysctl tables and the message-queue
            // file system's internal mount): the hardened profile refuses SysV IPC and message
            // queues by seccomp instead.
            (
                "+ user, mount, pid namespaces (no IPC namespace)",
                namespaces & !libc::CLONE_NEWIPC,
                make(Work::Nothing),
            ),
            (BINDS_1, namespaces, make(binds(1))),
            (BINDS_500, namespaces, make(binds(super::MANY_ROOTS))),
            (
                "+ strict seccomp filter load",
                0,
                make(Work::Seccomp(seccomp::unpack(&filter.program))),
            ),
            (RULES_1, 0, make(landlock(1))),
            (RULES_500, 0, make(landlock(super::MANY_ROOTS))),
        ];
        {
            let base = std::fs::canonicalize(tree.dir.path()).expect("canonical tree");
            let c = |s: String| CString::new(s).expect("no NUL");
            // SAFETY: getters without pointers.
            let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
            let mechanisms = Mechanisms {
                maps: [
                    (c"/proc/self/setgroups".into(), c("deny".into())),
                    (c"/proc/self/uid_map".into(), c(format!("1000 {uid} 1"))),
                    (c"/proc/self/gid_map".into(), c(format!("1000 {gid} 1"))),
                ],
                targets: [0, 1, 2].map(|i| c(base.join(format!("r{i:03}")).display().to_string())),
                filter: seccomp::unpack(&filter.program),
                landlock: landlock_spec(1),
            };
            variants.push((MECHANISMS, namespaces, make(Work::Strict(mechanisms))));
            // The declared root outside `/tmp`: the view's `/tmp` is each run's scratch.
            let outside = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
            let filter = seccomp::unpack(&filter.program);
            let abi = landlock_spec(1).abi;
            let leased = [
                (LEASED, filter.clone(), Variant::Unsupervised),
                (SUPERVISED, supervised_filter(), Variant::Supervised),
                {
                    let (program, tail) = sealed_filters();
                    (SEALED, program, Variant::Sealed(tail))
                },
                (HELD, filter, Variant::Held),
            ];
            for (name, filter, variant) in leased {
                // A held view's first child makes the pid namespace for its second; the IPC
                // namespace is the view's.
                let flags = match variant {
                    Variant::Held => 0,
                    _ => libc::CLONE_NEWPID,
                };
                match LeasedView::build(outside, filter, abi, variant) {
                    Ok(view) => variants.push((name, flags, make(Work::Leased(view)))),
                    Err(e) => eprintln!("skipped floor `{name}`: {e}"),
                }
            }
        }
        // What a strict run would cost with its declared roots prepared once per policy: the
        // binds as one tree, cloned per run in one call, and (not sound for the strict view,
        // whose per-run `/proc`, `/tmp` and `/dev` need rules of their own: see
        // `tests/landlock_facts.rs`) a ruleset built once.
        let base = std::fs::canonicalize(tree.dir.path()).expect("canonical tree");
        let roots: Vec<std::path::PathBuf> = (0..super::MANY_ROOTS)
            .map(|i| base.join(format!("r{i:03}")))
            .collect();
        let cpaths = |n: usize| -> Vec<CString> {
            roots[..n]
                .iter()
                .map(|r| CString::new(r.as_os_str().as_encoded_bytes()).expect("no NUL"))
                .collect()
        };
        // The copy is attached over the tree's own first directory (any directory of the
        // child's private namespace would do).
        let target = || cpaths(1).remove(0);
        for (name, n) in [(TREE_1, 1), (TREE_500, super::MANY_ROOTS)] {
            match BindTree::build(&cpaths(n), target()) {
                Ok(t) => variants.push((name, namespaces, make(Work::Tree(t)))),
                Err(e) => eprintln!("skipped floor `{name}`: {e}"),
            }
        }
        let abi = sandbox::landlock_rules::negotiated_abi(sandbox::hostcaps::landlock_abi());
        for (name, n) in [(ONCE_1, 1), (ONCE_500, super::MANY_ROOTS)] {
            match PrebuiltRuleset::build(abi, &roots[..n]) {
                Ok(r) => variants.push((name, 0, make(Work::Ruleset(r)))),
                Err(e) => eprintln!("skipped floor `{name}`: {e}"),
            }
        }
        let stack = std::cell::RefCell::new(vec![0u8; 256 << 10]);
        // A floor whose child fails here is left out, with its name (its wait status is in the
        // panic message above); one failing must not hide the others. Without the bare spawn,
        // which every line is read against, nothing is printed.
        variants.retain(|(name, flags, work)| {
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                spawn(*flags, work, &mut vec![0u8; 256 << 10])
            }))
            .is_ok();
            if !ok {
                eprintln!(
                    "skipped floor `{name}`: its child failed on this host (exit 126: a set-up \
                     step failed; 127: execve failed)"
                );
            }
            ok
        });
        if variants.first().map(|(name, _, _)| *name) != Some(BARE) {
            eprintln!("skipped floors: the bare `{BARE}` does not run on this host");
            return;
        }
        // The real strict runs with 1 and 500 declared roots, in the same rounds, against which
        // the floors are read.
        let strict_roots: Vec<(usize, super::Sandboxed)> = [1, super::MANY_ROOTS]
            .into_iter()
            .filter_map(|n| {
                super::Sandboxed::new(sandbox::Profile::Strict, &tree.policy(n))
                    .map_err(|e| eprintln!("skipped strict with {n} roots in the floors: {e}"))
                    .ok()
                    .map(|s| (n, s))
            })
            .collect();
        let mut t_plain = Times::default();
        let mut t_helper = Times::default();
        let mut times: Vec<Times> = variants.iter().map(|_| Times::default()).collect();
        let mut t_strict: Vec<Times> = strict_roots.iter().map(|_| Times::default()).collect();
        for _ in 0..rounds {
            t_plain.run(&super::plain);
            t_helper.run(&helper_start);
            for ((_, flags, work), t) in variants.iter().zip(&mut times) {
                t.run(&|| spawn(*flags, work, &mut stack.borrow_mut()));
            }
            for ((_, s), t) in strict_roots.iter().zip(&mut t_strict) {
                t.run(&|| s.spawn());
            }
        }
        let base = t_plain.us();
        let bare = times[0].us();
        println!(
            "floors, interleaved over {rounds} rounds (µs; each spawns and waits for /bin/true):"
        );
        println!(
            "  plain (Command, posix_spawn): wall {:.0}, cpu {:.0}",
            base.0, base.1
        );
        super::line(
            "the hardened zygote's start alone (policy-sandbox, no control socket; once per process)",
            &mut t_helper,
            base,
        );
        let mut cpu_of = std::collections::HashMap::new();
        for ((name, _, _), t) in variants.iter().zip(&mut times) {
            let (wall, cpu) = super::line(name, t, base);
            cpu_of.insert(*name, cpu);
            println!(
                "      over the bare clone: wall +{:.0}, cpu +{:.0}",
                wall - bare.0,
                cpu - bare.1
            );
        }
        let mut strict_cpu = std::collections::HashMap::new();
        for ((n, _), t) in strict_roots.iter().zip(&mut t_strict) {
            let (_, cpu) = super::line(&format!("strict run, {n} declared roots"), t, base);
            strict_cpu.insert(*n, cpu);
        }
        for (floor, what) in [
            (LEASED, "leased floor"),
            (SUPERVISED, "supervised floor (the runner's own part)"),
            (SEALED, "sealed supervised floor"),
        ] {
            if let (Some(floor), Some(strict)) = (cpu_of.get(floor), strict_cpu.get(&1)) {
                println!(
                    "  the 1-root strict run over its {what}: cpu +{:.0} ({:.2}× plain)",
                    strict - floor,
                    (strict - floor) / base.1
                );
            }
        }
        per_root_floor(&cpu_of, &strict_cpu);
    }

    const MECHANISMS: &str = "all of strict's per-run mechanisms but its view (user, mount, pid, \
        IPC namespaces, uid/gid maps, /proc, devpts, a scratch tmpfs, capabilities dropped, \
        seccomp, Landlock)";
    const LEASED: &str = "all of strict's per-run mechanisms in a leased view (the same in a view \
        namespace built once, with its devpts instance and a scratch the runs keep: the previous \
        run's /proc detached, the new one mounted, then the user namespace made with the view \
        joined)";
    const SUPERVISED: &str = "all of strict's per-run mechanisms in a leased view, supervised \
        (the same with the runner's program for net = deny, exec = deny: its listener passed to \
        the caller, which lets the execve through and serves the listener until the end)";
    const SEALED: &str = "all of strict's per-run mechanisms in a leased view, supervised, the \
        execve sealed (the same, but the command's execve admitted by a per-run secret in a \
        second filter, as the hardened command's is, so the caller waits as a vfork caller does)";
    const HELD: &str = "all of strict's per-run mechanisms in a view held in a user namespace \
        of its own (an unprivileged runner's design, mounts/held.rs: a first child joins that user \
        namespace and the view and makes the pid and IPC namespaces, a second, its parent's \
        child, does the rest)";
    const BARE: &str = "clone(VM|VFORK) + execve";
    const TREE_1: &str = "+ user, mount, pid, IPC namespaces, a 1-bind tree cloned in one call";
    const TREE_500: &str = "+ user, mount, pid, IPC namespaces, a 500-bind tree cloned in one call";
    const ONCE_1: &str =
        "Landlock: /usr, /etc and 1 path rule, ruleset built once, applied per run";
    const ONCE_500: &str =
        "Landlock: /usr, /etc and 500 path rules, ruleset built once, applied per run";
    const BINDS_1: &str = "+ user, mount, pid, IPC namespaces, 1 bind mount";
    const BINDS_500: &str = "+ user, mount, pid, IPC namespaces, 500 bind mounts";
    const RULES_1: &str = "+ Landlock ruleset, /usr, /etc and 1 path rule";
    const RULES_500: &str = "+ Landlock ruleset, /usr, /etc and 500 path rules";

    /// The strict profile's cost per declared root, by floor: each as the CPU time between its
    /// 500 and its 1 line over 499, and what a tree cloned per run plus a ruleset built per run
    /// (the floor of a strict run: its own mounts need their own rules) would make of the
    /// 500-root run against the 1-root run measured in the same rounds.
    fn per_root_floor(
        cpu: &std::collections::HashMap<&str, f64>,
        strict: &std::collections::HashMap<usize, f64>,
    ) {
        let extra = (super::MANY_ROOTS - 1) as f64;
        let slope = |one: &str, many: &str| Some((cpu.get(many)? - cpu.get(one)?) / extra);
        println!("  per declared root (cpu µs, the 500 line minus the 1 line, over 499):");
        let binds = slope(BINDS_1, BINDS_500);
        let tree = slope(TREE_1, TREE_500);
        let rules = slope(RULES_1, RULES_500);
        let once = slope(ONCE_1, ONCE_500);
        for (what, v) in [
            ("a bind made per run (today)", binds),
            ("a bind tree cloned per run", tree),
            ("a Landlock rule built per run (opened by path)", rules),
            ("a Landlock rule built once, applied per run", once),
        ] {
            if let Some(v) = v {
                println!("    {what}: {v:.2}");
            }
        }
        let (Some(&one), Some(&many)) = (strict.get(&1), strict.get(&super::MANY_ROOTS)) else {
            return;
        };
        println!(
            "    the strict run today: {:.2} ({:.2}× its 1-root run)",
            (many - one) / extra,
            many / one
        );
        if let (Some(tree), Some(rules), Some(once)) = (tree, rules, once) {
            let implied = |per_root: f64| (one + extra * per_root) / one;
            println!(
                "    floor, tree + per-run rule: {:.2} per root, 500 roots ≈ {:.2}× the 1-root run; \
                 with a ruleset built once (not sound for the strict view): {:.2} per root, {:.2}×",
                tree + rules,
                implied(tree + rules),
                tree + once,
                implied(tree + once)
            );
            // What the strict profile does (`rule_cover`): the roots' common parent in the view
            // is a directory of the view's own holding nothing but their mount points, so one
            // rule there grants what their 500 rules grant (tests/landlock_facts.rs: a rule on
            // the directory holding a bind's mount point reaches through the bind).
            println!(
                "    floor, tree + one rule on the roots' common parent in the view: {tree:.2} per \
                 root, {:.2}×",
                implied(tree)
            );
        }
    }
}
