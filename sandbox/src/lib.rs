//! # sandbox
//!
//! Runs subprocess tools confined by rules derived from their [`policy_runtime::ToolPolicy`],
//! failing closed: a policy the host cannot enforce is refused before anything starts.
//!
//! * [`plan`]: the enforcement plan and its per-rule report (exact, widened, not enforced).
//! * [`runner::run`]: the low-level runner; [`ProcessTool`]: a runtime tool around it.
//! * [`trampoline`]: the small helper process that confines itself (strict or hardened
//!   profile) and executes the command; spawned with `posix_spawn`.
//! * [`hostcaps`]: what this kernel offers.
//! * [`egress`]: the host-pinned network broker for `net = {hosts = [...]}`.
//!
//! Linux x86_64 only.

pub mod egress;
pub mod hostcaps;
pub mod landlock_rules;
pub mod mounts;
pub mod plan;
pub mod process_tool;
pub mod request;
pub mod runner;
pub mod seccomp;
mod spawn;
pub mod trampoline;

pub use plan::{Enforcement, Plan, Profile, RuleReport};
pub use process_tool::ProcessTool;
pub use runner::{run, RunError, RunOptions, RunOutput, Stdio};
