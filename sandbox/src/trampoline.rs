//! The entry point of the helper binary, which serves as the hardened profile's zygote
//! ([`crate::zygote`]): the hidden [`SUBCOMMAND`], and [`serve_if_requested`] for an agent that
//! is its own helper.
//!
//! The module keeps its name from the per-run trampoline process that once stood between the
//! zygote and the command; the zygote now forks and supervises each command itself.

use std::io::Write;

pub use crate::child::REFUSED_EXIT;

/// The hidden subcommand that makes a binary act as the hardened profile's zygote
/// ([`crate::zygote`]), which forks and supervises the command of each run.
pub const SUBCOMMAND: &str = "__toolpolicy_zygote";

static SELF_SERVES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Lets the calling binary be its own sandbox helper: call it first thing in `main`. When the
/// process was started as the helper (`argv[1]` is [`SUBCOMMAND`]) it becomes the zygote and
/// never returns; otherwise it records that this executable can serve, so
/// [`crate::runner::locate_helper`] uses it and no separate `policy-sandbox` is needed.
///
/// ```no_run
/// // First statement of the agent's `main`:
/// sandbox::trampoline::serve_if_requested();
/// // ... then the agent, which runs sandboxed tools ...
/// ```
pub fn serve_if_requested() {
    if std::env::args_os().nth(1).is_some_and(|a| a == SUBCOMMAND) {
        main();
    }
    SELF_SERVES.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`serve_if_requested`] was called in this process.
pub fn self_serves() -> bool {
    SELF_SERVES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Runs the zygote ([`crate::zygote`]). Call it from `main` when `argv[1]` is [`SUBCOMMAND`];
/// never returns.
pub fn main() -> ! {
    crate::zygote::serve()
}

/// Writes to the helper's own stderr.
pub fn write_stderr(message: &str) {
    let _ = std::io::stderr().write_all(message.as_bytes());
}
