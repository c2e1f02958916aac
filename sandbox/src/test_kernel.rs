//! The unit tests' answer to a missing kernel feature, as `tests/support/kernel.rs` gives the
//! integration tests': a skip with the reason, or a failure where `TOOLPOLICY_REQUIRE_KERNEL=1`
//! (CI) says the feature must be there.

/// Skips (prints why) or, under `TOOLPOLICY_REQUIRE_KERNEL=1`, fails the calling test.
pub(crate) fn missing(reason: &str) {
    if std::env::var("TOOLPOLICY_REQUIRE_KERNEL").as_deref() == Ok("1") {
        panic!("TOOLPOLICY_REQUIRE_KERNEL=1 but this host lacks a feature: {reason}");
    }
    eprintln!("skipped: {reason}");
}

/// What `made` made, for a test that needs root to make it: `None` (after saying why) when
/// this process is not root, and a failed test when root could not make `what`.
pub(crate) fn made_as_root<T>(made: Result<T, String>, what: &str) -> Option<T> {
    match made {
        Ok(made) => Some(made),
        // SAFETY: geteuid cannot fail.
        Err(e) if unsafe { libc::geteuid() } != 0 => {
            eprintln!("skipped: making {what} needs root here: {e}");
            None
        }
        Err(e) => panic!("root could not make {what}: {e}"),
    }
}
