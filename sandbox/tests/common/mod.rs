//! Shared machinery of the escape suite: the users a probe runs as, how it is started (bare or
//! under `policy-sandbox run`), what it reported, and the host-side bait (listeners, victim
//! processes, secret files) that an escape would reach.

#![allow(dead_code)] // each test binary uses part of it

pub mod bait;
#[path = "../support/kernel.rs"]
pub mod kernel;
pub mod pty;
pub mod traces;

use std::fs;
use std::os::unix::fs::{chown, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Exit status of `policy-sandbox` when it refuses to run the command (`policy-runtime/docs/cli.md`).
pub const REFUSED_EXIT: i32 = 125;

/// The uid and gid of the unprivileged user the suite also runs as.
pub const NOBODY: u32 = 65534;

/// Who runs the command under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    /// The test process's own identity (root on this project's CI).
    Root,
    /// uid/gid 65534 with no supplementary groups, via `setpriv`.
    Nobody,
}

impl User {
    /// Numeric uid that files the run needs should belong to.
    pub fn uid(self) -> u32 {
        match self {
            // SAFETY: geteuid cannot fail.
            User::Root => unsafe { libc::geteuid() },
            User::Nobody => NOBODY,
        }
    }

    /// Short name for messages and directory names.
    pub fn name(self) -> &'static str {
        match self {
            User::Root => "root",
            User::Nobody => "nobody",
        }
    }

    /// Prefix that runs a command as this user.
    pub fn prefix(self) -> Vec<String> {
        match self {
            User::Root => vec![],
            User::Nobody => [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
            ]
            .map(String::from)
            .to_vec(),
        }
    }
}

/// The users this host lets the suite run as: always the current one, and nobody when the
/// tests run as root and `setpriv` exists.
pub fn users() -> Vec<User> {
    let mut users = vec![User::Root];
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("note: not running as root; the unprivileged pass is the only pass");
        return users;
    }
    if Command::new("setpriv")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        users.push(User::Nobody);
    } else {
        kernel::missing(
            "setpriv is not installed, so there is no uid 65534 pass (install util-linux; \
             scripts/setup.sh does)",
        );
    }
    users
}

/// Sandbox profiles of `policy-sandbox run --profile`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Namespaces + Landlock + seccomp: must block every escape.
    Strict,
    /// Landlock + seccomp without namespaces: must block or refuse, never let an escape through.
    Hardened,
}

impl Profile {
    /// The `--profile` value.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Strict => "strict",
            Profile::Hardened => "hardened",
        }
    }

    /// The profiles the host can run, after printing why any is skipped.
    pub fn available() -> Vec<Profile> {
        let mut profiles = vec![];
        if kernel::landlock_abi() < 1 {
            kernel::missing("Landlock is not available; no sandbox profile can be tested");
            return profiles;
        }
        if kernel::user_namespaces() {
            profiles.push(Profile::Strict);
        } else {
            kernel::missing("unprivileged user namespaces are not available; skipping strict");
        }
        profiles.push(Profile::Hardened);
        profiles
    }
}

/// The built binaries, at paths uid 65534 can execute.
pub struct Binaries {
    /// The `escape-probe` binary.
    pub probe: PathBuf,
    /// The `policy-sandbox` binary.
    pub sandbox: PathBuf,
    /// The `escape-runner` binary (a long-lived runner's second run).
    pub runner: PathBuf,
}

/// Whether every directory above `path` is searchable and `path` itself readable and
/// executable by others, i.e. by uid 65534.
fn world_executable(path: &Path) -> bool {
    let mode = |p: &Path| fs::metadata(p).map(|m| m.permissions().mode()).unwrap_or(0);
    mode(path) & 0o005 == 0o005 && path.ancestors().skip(1).all(|dir| mode(dir) & 0o001 != 0)
}

/// The binaries as built when uid 65534 can reach them; otherwise copies in a 0755 temporary
/// directory that is removed when the test process exits.
pub fn binaries() -> &'static Binaries {
    static BINARIES: OnceLock<Binaries> = OnceLock::new();
    static COPIES: OnceLock<PathBuf> = OnceLock::new();
    extern "C" fn remove_copies() {
        if let Some(dir) = COPIES.get() {
            let _ = fs::remove_dir_all(dir);
        }
    }
    BINARIES.get_or_init(|| {
        let built = [
            env!("CARGO_BIN_EXE_escape-probe"),
            env!("CARGO_BIN_EXE_policy-sandbox"),
            env!("CARGO_BIN_EXE_escape-runner"),
        ];
        if built.iter().all(|b| world_executable(Path::new(b))) {
            return Binaries {
                probe: built[0].into(),
                sandbox: built[1].into(),
                runner: built[2].into(),
            };
        }
        let dir = COPIES.get_or_init(|| world_dir("escapes-bin").keep());
        // SAFETY: registers a plain function to run at exit; it only removes a directory.
        unsafe { libc::atexit(remove_copies) };
        let copy = |from: &str| {
            let to = dir.join(Path::new(from).file_name().unwrap());
            fs::copy(from, &to).unwrap_or_else(|e| panic!("copy {from} to {}: {e}", to.display()));
            fs::set_permissions(&to, fs::Permissions::from_mode(0o755)).unwrap();
            to
        };
        Binaries {
            probe: copy(built[0]),
            sandbox: copy(built[1]),
            runner: copy(built[2]),
        }
    })
}

/// A fresh temporary directory with mode 0755.
pub fn world_dir(prefix: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("create a temporary directory");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// A directory tree for one user's run of one escape:
///
/// ```text
/// <root>/work/        write root of the policy
/// <root>/data/        read root of the policy (holds data/file)
/// <root>/outside/     in no root (holds outside/file)
/// <root>/home/.ssh/id_rsa   a fake private key, mode 0600, outside every root
/// ```
///
/// Everything belongs to the run's user, so the bare run can do what the escape attempts.
pub struct Scenario {
    /// The user the scenario is made for.
    pub user: User,
    /// The top directory.
    pub root: PathBuf,
    _dir: tempfile::TempDir,
}

/// Text of the fake private key; the probe looks for it to tell the real file from a stand-in.
pub const SECRET_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- toolpolicy-escape-test-secret";

impl Scenario {
    /// Builds the tree for `user`.
    pub fn new(user: User) -> Scenario {
        let dir = world_dir(&format!("escapes-{}-", user.name()));
        let root = dir.path().to_path_buf();
        for sub in ["work", "data", "outside", "home", "home/.ssh"] {
            fs::create_dir(root.join(sub)).unwrap();
        }
        fs::write(root.join("data/file"), "read-only data\n").unwrap();
        fs::write(root.join("outside/file"), "outside data\n").unwrap();
        fs::write(root.join("home/.ssh/id_rsa"), format!("{SECRET_KEY}\n")).unwrap();
        let uid = user.uid();
        for sub in [
            "",
            "work",
            "data",
            "data/file",
            "outside",
            "outside/file",
            "home",
            "home/.ssh",
            "home/.ssh/id_rsa",
        ] {
            let path = root.join(sub);
            chown(&path, Some(uid), Some(uid)).unwrap();
            let mode = match sub {
                "home/.ssh" => 0o700,
                "home/.ssh/id_rsa" => 0o600,
                "data/file" | "outside/file" => 0o644,
                _ => 0o755,
            };
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        }
        Scenario {
            user,
            root,
            _dir: dir,
        }
    }

    /// `<root>/<rel>` as a string for probe arguments.
    pub fn path(&self, rel: &str) -> String {
        self.root
            .join(rel)
            .to_str()
            .expect("UTF-8 temp path")
            .to_string()
    }

    /// Writes a single-tool TOML policy file readable by the run's user and returns its path.
    pub fn policy(&self, name: &str, toml: &str) -> PathBuf {
        let path = self.root.join(format!("{name}.toml"));
        fs::write(&path, toml).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        path
    }

    /// [`Scenario::base_policy`] with `exec = "allow"`, for attacks through other programs.
    pub fn exec_allowed_policy(&self) -> String {
        self.base_policy()
            .replace("exec = \"deny\"", "exec = \"allow\"")
    }

    /// The usual policy: write `work`, read `data`, no network, no exec, empty environment.
    ///
    /// It sets no `max_processes`: for a non-root runner that becomes RLIMIT_NPROC, which counts
    /// every process of the uid on the host, so parallel tests as uid 65534 would starve each
    /// other. The fork-bomb test sets it.
    pub fn base_policy(&self) -> String {
        format!(
            r#"net = "deny"
exec = "deny"
env = "deny"

[fs]
read = ["{data}/**"]
write = ["{work}/**"]

[limits]
timeout_ms = 30000
"#,
            data = self.path("data"),
            work = self.path("work"),
        )
    }
}

/// What a run of the probe reported.
#[derive(Debug)]
pub struct Report {
    /// How the command was started, for messages.
    pub command: String,
    /// Exit code, or `None` when killed by a signal.
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Report {
    /// The probe's result line (`SUCCEEDED`, `BLOCKED`, `ERROR` or `STATUS`), if any.
    pub fn result_line(&self) -> Option<&str> {
        self.stdout.lines().find(|l| {
            ["SUCCEEDED ", "BLOCKED ", "ERROR ", "STATUS "]
                .iter()
                .any(|p| l.starts_with(p))
        })
    }

    /// Whether the probe got as far as attempting its action.
    pub fn started(&self) -> bool {
        self.stderr.contains("escape-probe: attempting")
    }

    /// Whether `policy-sandbox` refused the policy without starting the command.
    pub fn refused(&self) -> bool {
        self.code == Some(REFUSED_EXIT) && self.stderr.lines().any(|l| l.starts_with("refused:"))
    }

    fn describe(&self) -> String {
        format!(
            "command: {}\nexit: {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.command, self.code, self.stdout, self.stderr
        )
    }

    /// Panics unless the probe ran and its action succeeded.
    pub fn assert_succeeded(&self, what: &str) {
        let ok = self
            .result_line()
            .is_some_and(|l| l.starts_with("SUCCEEDED "));
        assert!(
            ok,
            "{what}: without the sandbox this action must succeed, or the sandboxed test proves \
             nothing\n{}",
            self.describe()
        );
    }

    /// Panics unless the probe started and the action was blocked (a `BLOCKED` line, or the
    /// probe killed before it could report, e.g. by seccomp).
    pub fn assert_blocked(&self, what: &str) {
        assert!(
            !self.refused(),
            "{what}: the sandbox refused a policy it should enforce\n{}",
            self.describe()
        );
        assert!(
            self.started(),
            "{what}: the probe never started inside the sandbox, so nothing was tested\n{}",
            self.describe()
        );
        match self.result_line() {
            Some(l) if l.starts_with("BLOCKED ") => {}
            None if self.code != Some(0) => {}
            Some(l) if l.starts_with("ERROR ") => panic!(
                "{what}: the probe could not even attempt the escape inside the sandbox, so \
                 nothing was tested\n{}",
                self.describe()
            ),
            _ => panic!(
                "{what}: ESCAPE — the sandbox did not block it\n{}",
                self.describe()
            ),
        }
    }

    /// Like [`Report::assert_blocked`], but a refusal (exit 125 with `refused:`) is also fine.
    pub fn assert_blocked_or_refused(&self, what: &str) {
        if !self.refused() {
            self.assert_blocked(what);
        }
    }

    /// Panics unless a strict run of [`Mode::Lent`] copied its view from a template (the
    /// runner's, or one held in a user namespace of its own), so that the lent run tested
    /// what an agent's runs get; prints where its namespaces came from.
    pub fn assert_lent(&self, what: &str, profile: Profile) {
        let line = self
            .stderr
            .lines()
            .find_map(|l| l.strip_prefix("escape-runner: view="));
        let Some(line) = line else {
            assert!(
                self.refused(),
                "{what}: escape-runner did not say where its view came from\n{}",
                self.describe()
            );
            return;
        };
        if profile == Profile::Strict {
            let view = line.split_whitespace().next().unwrap_or_default();
            assert!(
                ["Template", "HeldTemplate"].contains(&view),
                "{what}: the lent run built its view itself, so no lent view was tested\n{}",
                self.describe()
            );
        }
        eprintln!("{what}: view={line}");
    }

    /// The value of `key=` in a `STATUS` line.
    pub fn status_field(&self, key: &str) -> Option<String> {
        let line = self.result_line()?.strip_prefix("STATUS ")?;
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .map(String::from)
    }
}

/// How to start the probe.
#[derive(Clone, Copy, Debug)]
pub enum Mode<'a> {
    /// On the bare host.
    Bare,
    /// On the bare host as the child of a shell of the same user, so that "the parent" is an
    /// ordinary process of that user rather than the test harness.
    BareUnderShell,
    /// Under `policy-sandbox run --policy FILE --profile PROFILE`.
    Sandboxed(&'a Path, Profile),
    /// Under `policy-sandbox run --policy FILE` with no `--profile` (must mean strict).
    SandboxedByDefault(&'a Path),
    /// As the second run of a long-lived runner (`escape-runner --policy FILE --profile
    /// PROFILE`), which gets the view, namespaces or scratch slot its first run gave back.
    Lent(&'a Path, Profile),
}

/// Runs `escape-probe ARGS` as `user` in `mode`, with a hard timeout.
pub fn probe(user: User, mode: Mode<'_>, args: &[&str]) -> Report {
    run_with_timeout(&probe_argv(user, mode, args), Duration::from_secs(90))
}

/// The command line that runs `escape-probe ARGS` as `user` in `mode`.
pub fn probe_argv(user: User, mode: Mode<'_>, args: &[&str]) -> Vec<String> {
    let bins = binaries();
    let probe = bins.probe.to_str().unwrap().to_string();
    let mut argv = user.prefix();
    match mode {
        Mode::Bare => argv.push(probe),
        Mode::BareUnderShell => {
            argv.extend(["/bin/sh", "-c", "\"$0\" \"$@\"; exit $?"].map(String::from));
            argv.push(probe);
        }
        Mode::Sandboxed(policy, profile) | Mode::Lent(policy, profile) => {
            if let Mode::Lent(..) = mode {
                argv.push(bins.runner.to_str().unwrap().to_string());
                argv.push("--policy".into());
            } else {
                argv.push(bins.sandbox.to_str().unwrap().to_string());
                argv.extend(["run", "--policy"].map(String::from));
            }
            argv.push(policy.to_str().unwrap().to_string());
            argv.extend(["--profile", profile.name(), "--"].map(String::from));
            argv.push(probe);
        }
        Mode::SandboxedByDefault(policy) => {
            argv.push(bins.sandbox.to_str().unwrap().to_string());
            argv.extend(["run", "--policy"].map(String::from));
            argv.push(policy.to_str().unwrap().to_string());
            argv.push("--".into());
            argv.push(probe);
        }
    }
    argv.extend(args.iter().map(|a| a.to_string()));
    argv
}

/// `policy-sandbox run --report --policy FILE --profile P -- ARGV` as `user`, killed after two
/// minutes.
pub fn sandboxed(user: User, policy: &Path, profile: Profile, argv: &[&str]) -> Report {
    let mut full = user.prefix();
    full.push(binaries().sandbox.display().to_string());
    full.extend(["run", "--report", "--policy"].map(String::from));
    full.push(policy.display().to_string());
    full.extend(["--profile", profile.name(), "--"].map(String::from));
    full.extend(argv.iter().map(|a| a.to_string()));
    run_with_timeout(&full, Duration::from_secs(120))
}

/// Runs `argv` with stdin closed, capturing output; kills it after `limit`.
pub fn run_with_timeout(argv: &[String], limit: Duration) -> Report {
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).stdin(Stdio::null());
    wait_with_timeout(command, limit)
}

/// Runs `command` (arguments and stdin already set), capturing stdout and stderr; kills it
/// after `limit`.
pub fn wait_with_timeout(mut command: Command, limit: Duration) -> Report {
    let shown = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let command_line = shown.clone();
    let mut child = command
        .current_dir("/")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{command_line}`: {e}"));
    let command = shown;
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "`{command}` did not finish within {limit:?}\n--- stdout ---\n{}--- stderr ---\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    Report {
        command,
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// The whole check for one escape: for every user, the bare run must succeed, and every
/// available profile must block it (strict) or block or refuse it (hardened), both in a
/// process's only run (`policy-sandbox run`) and in a long-lived runner's second run
/// ([`Mode::Lent`]).
///
/// `setup` builds the bait for one user and returns the probe arguments, the policy text and a
/// host-side check that the escape left no trace (run after every sandboxed attempt).
pub fn escape<S>(what: &str, setup: S)
where
    S: Fn(&Scenario) -> Option<Attempt>,
{
    escape_in(&[Profile::Strict, Profile::Hardened], what, setup)
}

/// [`escape`] limited to some profiles (those of them the host can run).
pub fn escape_in<S>(only: &[Profile], what: &str, setup: S)
where
    S: Fn(&Scenario) -> Option<Attempt>,
{
    let profiles: Vec<Profile> = Profile::available()
        .into_iter()
        .filter(|p| only.contains(p))
        .collect();
    for user in users() {
        for profile in profiles.iter().copied() {
            let scenario = Scenario::new(user);
            let Some(attempt) = setup(&scenario) else {
                continue;
            };
            let label = format!("{what} [as {}, {}]", user.name(), profile.name());
            let bare_mode = if attempt.under_shell {
                Mode::BareUnderShell
            } else {
                Mode::Bare
            };
            (attempt.reset)();
            let args = (attempt.args)();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            probe(user, bare_mode, &args).assert_succeeded(&label);
            let policy = scenario.policy("policy", &attempt.policy);
            for mode in [
                Mode::Sandboxed(&policy, profile),
                Mode::Lent(&policy, profile),
            ] {
                let label = match mode {
                    Mode::Lent(..) => format!("{label}, lent"),
                    _ => label.clone(),
                };
                (attempt.reset)();
                let args = (attempt.args)();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let report = probe(user, mode, &args);
                match profile {
                    Profile::Strict => report.assert_blocked(&label),
                    Profile::Hardened => report.assert_blocked_or_refused(&label),
                }
                if let Mode::Lent(..) = mode {
                    report.assert_lent(&label, profile);
                }
                if let Err(trace) = (attempt.no_trace)() {
                    panic!(
                        "{label}: the probe reported no success, but the host shows one: {trace}"
                    );
                }
                eprintln!(
                    "{label}: {}",
                    if report.refused() {
                        "refused".to_string()
                    } else {
                        report
                            .result_line()
                            .unwrap_or("(killed before reporting)")
                            .to_string()
                    }
                );
            }
        }
    }
}

/// One escape attempt, as built for a scenario.
pub struct Attempt {
    /// Arguments of `escape-probe`, computed before each run (a pid may change).
    pub args: Box<dyn Fn() -> Vec<String>>,
    /// Policy TOML for the sandboxed run.
    pub policy: String,
    /// Start the bare run as the child of a same-user shell ([`Mode::BareUnderShell`]).
    pub under_shell: bool,
    /// Restores the bait before each run (e.g. removes a file the bare run created).
    pub reset: Box<dyn Fn()>,
    /// Checks on the host that the sandboxed attempt had no effect.
    pub no_trace: Box<dyn Fn() -> Result<(), String>>,
}

impl Attempt {
    /// An attempt with nothing to reset and no host-side check.
    pub fn new(args: &[&str], policy: String) -> Attempt {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        Attempt {
            args: Box::new(move || args.clone()),
            policy,
            under_shell: false,
            reset: Box::new(|| {}),
            no_trace: Box::new(|| Ok(())),
        }
    }

    /// Computes the probe arguments anew before each run.
    pub fn args(mut self, f: impl Fn() -> Vec<String> + 'static) -> Attempt {
        self.args = Box::new(f);
        self
    }

    /// Sets the reset step.
    pub fn reset(mut self, f: impl Fn() + 'static) -> Attempt {
        self.reset = Box::new(f);
        self
    }

    /// Sets the host-side check.
    pub fn no_trace(mut self, f: impl Fn() -> Result<(), String> + 'static) -> Attempt {
        self.no_trace = Box::new(f);
        self
    }

    /// Runs the bare attempt under a same-user shell.
    pub fn under_shell(mut self) -> Attempt {
        self.under_shell = true;
        self
    }
}
