//! # sandbox
//!
//! Runs subprocess tools confined by rules derived from their [`policy_runtime::ToolPolicy`],
//! failing closed: a policy the host cannot enforce is refused before anything starts, and
//! nothing runs unconfined unless the caller says so ([`RunOptions::unconfined()`]).
//!
//! * [`plan`]: the enforcement plan and its per-rule report (exact, widened, not enforced),
//!   which goes into every run's audit metadata ([`RunOutput::audit`]).
//! * [`runner::run`]: the low-level runner; [`ProcessTool`]: a runtime [`policy_runtime::Tool`]
//!   around it (policy + a function from JSON arguments to argv).
//! * [`zygote`] and [`trampoline`]: the hardened profile's helper process: a zygote started
//!   once per process, which starts and supervises the command of each run.
//! * [`hostcaps`]: what this kernel offers; [`egress`]: the host-pinned network broker for
//!   `net = {hosts = [...]}`.
//! * [`confine::confine_self`]: confines the calling process itself (and every process it
//!   starts) with the hardened profile's mechanisms, usually under the union of an agent's tools'
//!   policies ([`policy_runtime::union::union`]); refuses with nothing applied when any part
//!   cannot be enforced.
//!
//! # Protected paths
//!
//! Every plan lists the protected paths ([`policy_runtime::protected`]: the agent's own state)
//! with a typed status ([`plan::ProtectedRule`]). One no write root covers stays unwritable in
//! both profiles. One a write root covers is bound read-only over itself in strict, with its
//! directories up to the write root pinned as mount points ([`mounts::MountOp::Keep`]: writing,
//! truncating, unlinking, renaming over, hard-linking, renaming the parent all fail); one that
//! does not exist or is a symlink cannot be held so and is reported `not_enforced`, as is every
//! covered path in hardened (Landlock cannot take back a right beneath a granted directory).
//!
//! # Profiles
//!
//! **strict** (the default): user namespace with inner uid 1000 (so the command holds no
//! capability after `execve`; made with a leased view and joined by its runs, where it owns
//! none of their namespaces and no run can change it: `mounts::lent_user`), mount namespace
//! with a tmpfs root holding only the read roots (read-only), write roots (read-write), a private `/tmp` and `/dev/shm` (one tmpfs of
//! `limits.memory_bytes`, or 1 GiB: [`plan::scratch_bytes`]; new for each run, or kept from a
//! run of a leased view that never touched it, `mounts::view_ns`), a fresh read-only `/proc`
//! (its global entries are the host's own), a curated `/dev` (the host's null, zero, full,
//! random and urandom nodes, bound read-only: a root runner's tool would own them) with a
//! devpts instance of its own (ptys work, the host's are invisible; a leased view's instance
//! serves its runs one at a time, and only while no pty is open in it and its modes and times
//! are as mounted) and nothing of `/run`, `/home`, `/root`, `/var` or `/sys`. A declared root
//! always shows the host tree it names: a root holding `/tmp` shows the host's `/tmp` (then
//! there is no private one), and a root naming `/proc` or `/dev`, which strict replaces with
//! its own, is refused. Under a root
//! runner the view is built once per policy and its mount namespace belongs to the runner,
//! lent to one run at a time, so the command holds no capability over any of its mounts
//! (`mounts::template`, `mounts::view_ns`). Pid namespace, in which the command is pid 1 (the
//! tree dies together, with the command, at the timeout, or with the caller); IPC namespace
//! (lent with a leased view, and lent again only when the run left no System V object or
//! message queue in it: `ipcns`); network namespace unless net = allow (loopback down for
//! deny, the egress listeners for a host list; for deny under a root runner, an empty
//! namespace leased from the runner's pool, which the run holds no capability over and no
//! other run shares while it runs: [`netns`]); then capability drop, NO_NEW_PRIVS, Landlock
//! (every right of the negotiated ABI, `HardRequirement`), rlimits and seccomp.
//!
//! **hardened** (only by name, for hosts without user namespaces): the same Landlock, seccomp,
//! rlimits and NO_NEW_PRIVS, capabilities dropped for good (securebits), a private scratch
//! directory as `$TMPDIR` (and as `$HOME` and the `$XDG_*` directories when those lie outside
//! every root: the tool could see its files exist but not open them; leased with a Landlock
//! ruleset built once per policy, emptied between runs, see `slots`), `socket()` (and unix datagram `socketpair()`s) refused when
//! net = deny, and the command in a process group it cannot leave (`setpgid`/`setsid` refused),
//! which the zygote (a child subreaper) kills whole at the end, at
//! the timeout, or when the caller dies. Host lists and exec allow-lists are refused there (see
//! [`plan`]). Without a mount namespace there is no private `/dev/shm` or devpts to give: the
//! host's stay closed, so POSIX shared memory, semaphores and ptys fail (unless `/dev/shm` is
//! declared), as the report says. Its filter also refuses
//! the SysV IPC and POSIX message-queue calls (no IPC namespace: an id guessed for `shmat`
//! reaches host segments),
//! `prlimit64`, the `sched_set*` calls, `setpriority` and `ioprio_set` on any process but the
//! caller (a same-uid host process could be starved or given `RLIMIT_CPU = 0`), and, when no
//! write root is declared or the runner is root (of the host, whatever uid it has in a user
//! namespace of its own, or of the user namespace it runs in: either uid owns a system's
//! files), every
//! change of a file's mode, owner, timestamps or extended attributes (Landlock up to ABI 7 does
//! not govern them). With write roots and an unprivileged runner those stay open on the files
//! the runner's uid owns, and the
//! report says so on every `fs.write` rule (`widened`), as it says on every `fs.read` rule
//! that `stat` and inotify reach every host path.
//!
//! What hardened leaves open, whatever the policy ([`plan::HARDENED_LEAVES_OPEN`]; each is a
//! `not_enforced` line of its report, and `policy-sandbox run --help` prints the same list):
//! * **host processes invisible**: other processes and their command lines (`/proc/PID/cmdline`);
//! * **host network state hidden**: the host's listening ports and sockets (`/proc/net/tcp`, ...);
//! * **metadata of paths outside the roots**: `stat`, `readlink`, `getxattr`, `chmod`, `chown`,
//!   `utimes`, `setxattr` and `inotify` (so its `fs.*` rules are reported widened, never exact).
//!
//! What both profiles leave open in `/proc`, each a `not_enforced` line of every report:
//! [`plan::KEY_DESCRIPTIONS_LISTED`] (`/proc/keys` lists the descriptions of the runner's uid's
//! keys; `keyctl` is refused, so not their contents) and, under a runner that is the host's
//! root, [`plan::ROOT_TOOL_READS_ROOT_PROC`] (the root-only entries a mode bit alone guards).
//!
//! # Design choices
//!
//! * **Spawn cost**: nothing copies the caller's page tables, so the cost does not grow with
//!   the caller's memory. In strict, one `clone(CLONE_VM | CLONE_NEW*)` puts the child straight
//!   into its namespaces; it shares the caller's memory (not its descriptors, signals or
//!   credentials) until it executes the command, which is then pid 1 of its pid namespace, and
//!   the caller supervises it directly: no helper binary, no second process image, no
//!   supervising process. The rule that makes the sharing safe (the calling thread blocks
//!   every signal and makes only system calls until the child has executed) is documented in
//!   the private `nsclone` module. In hardened, the caller `posix_spawn`s the zygote
//!   (`CLONE_VM|CLONE_VFORK`) once per process, the `policy-sandbox` binary's hidden
//!   subcommand or any binary that calls [`trampoline::serve_if_requested`] first in `main`
//!   ([`runner`] documents how it is found), and the zygote starts each run's command
//!   process with `clone(CLONE_VM)` ([`zygote`]). Plans, mount lists, Landlock rule lists and compiled seccomp programs are
//!   cached per policy, profile and program ([`runner::prepare`]).
//! * **exec = deny**: a seccomp user-notification filter sends every `execve`/`execveat` to the
//!   supervisor, which lets exactly the first one (the command itself) through and answers
//!   `EPERM` to every later one. This stops `ld-linux.so /bin/sh` and binaries copied into a
//!   write root, which Landlock's Execute right alone cannot (the loader must be executable
//!   for the command to start). Write roots are also mounted `noexec`. A script's interpreter
//!   chain is resolved when the plan is made ([`interpreters`]): `#!/bin/sh` needs nothing
//!   more, `#!/usr/bin/env python3` also admits `env`'s `PATH` search, and the report names
//!   the chain.
//! * **exec = {allow = [...]}** also covers the command itself: a command that is not listed is
//!   refused before anything starts. Bare names are found on `PATH` outside the write roots.
//! * **Host pathname unix sockets** (strict, net = deny or a host list): a socket file inside a
//!   root is not hidden by the network namespace, and Landlock governs `connect` to it only from
//!   ABI 9. Every `connect` goes to the supervisor, which connects on the tool's behalf with its
//!   own copy of the address, and only to sockets on the sandbox's own filesystems (its
//!   private `/tmp`); unix datagram sockets are refused (see the private `supervisor` module).
//! * **exec = {allow = [...]}**: Landlock Execute only on the listed programs, the command and their
//!   interpreters; in strict, every bind is `noexec` except the library directories and the
//!   individually bound programs, so the loader cannot map other programs either. What is left
//!   (executables inside library directories run through the loader) is reported as a
//!   widening. `memfd_create` is answered `ENOSYS`: a memfd lies outside every mount, so a
//!   program copied into one could be run by `fexecve` or by the loader.
//! * **No set-user-ID files**: in strict, the tool's files belong to the runner on the host
//!   (root, when the runner is root). In both profiles seccomp argument filters refuse a
//!   set-user-ID or set-group-ID bit in every mode the tool can set (the chmod family, and
//!   `open`/`openat`/`creat`/`mknod` creating a file; `openat2`, whose mode a filter cannot
//!   read, is answered `ENOSYS`), and the tool never holds `CAP_SETFCAP` for file
//!   capabilities; [`seccomp`] explains the choice.
//! * **Process limit**: RLIMIT_NPROC is not enforced for the host's root, so a root runner
//!   puts each run in its own pids cgroup (v1 `pids` hierarchy or v2 with `pids` delegated at
//!   the root) with `pids.max` = limit; a non-root runner uses RLIMIT_NPROC (reported as
//!   widened: it counts the user's other processes too); a runner whose user is the host's root
//!   and has no writable pids cgroup is refused when `max_processes` is declared. What counts
//!   is the host's uid, not the one the runner has in its user namespace: root of a rootless
//!   container (another host uid) gets RLIMIT_NPROC, and the host's root under another uid in
//!   a user namespace is refused, which the kernel is asked once per process
//!   ([`hostcaps::HostSupport::host_root`]; `tests/resources.rs` runs both).
//! * **Memory limit**: `memory_bytes` is RLIMIT_AS of each process, which does not count tmpfs
//!   or memfd pages. A root runner therefore also puts each run in its own memory cgroup (v1,
//!   below the runner's own memory cgroup so the runner's limits still apply, or v2 with
//!   `memory` delegated at the root; swap counted) and the report calls the limit exact; without
//!   one the limit is reported widened, naming what it misses. Either way the strict tmpfs is
//!   sized to the limit. Run cgroups are named `toolpolicy-<pid>-<n>`, joined by the root of the
//!   tool's tree (not the hardened zygote) and removed after the run; one that cannot be
//!   made refuses the run. Limits below what any program starts under
//!   ([`plan::MIN_MEMORY_BYTES`], [`plan::MIN_OPEN_FILES`]) are refused with the reason.
//!
//! Linux x86_64 only.

pub mod canonical;
mod cgroup;
mod child;
pub mod confine;
pub mod egress;
mod fdpass;
mod fingerprint;
pub mod hostcaps;
pub mod interpreters;
mod ipcns;
pub mod landlock_rules;
pub mod mounts;
pub mod netns;
mod nsclone;
mod per_process;
pub mod plan;
pub mod process_tool;
pub mod request;
mod rule_cover;
pub mod runner;
mod scratch;
pub mod seccomp;
mod slots;
mod spawn;
mod supervisor;
#[cfg(test)]
mod test_kernel;
pub mod trampoline;
pub mod zygote;

pub use confine::{confine_self, confine_self_with, ConfineError, Confinement};
pub use plan::{Enforcement, Plan, Profile, RuleReport};
pub use process_tool::ProcessTool;
pub use runner::{run, RunError, RunOptions, RunOutput, Stdio};
