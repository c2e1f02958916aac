//! What the example tests share: turns at the demo world, and the skip-or-fail rule for hosts
//! that cannot run the strict sandbox profile.

use std::fs::File;

use policy_runtime::ToolPolicy;
use sandbox::hostcaps::HostSupport;
use sandbox::{Plan, Profile};

/// Both test binaries of this package lay out /tmp/toolpolicy-demo; they take turns (an
/// exclusive `flock`, released when the file drops).
pub fn world_lock() -> File {
    let f = File::create("/tmp/toolpolicy-demo.lock").expect("create the world lock");
    f.lock().expect("lock the demo world");
    f
}

/// Whether the strict profile can run here, as the sandbox's own plan decides. When it cannot,
/// prints why and returns `false` (the caller skips), except under
/// `TOOLPOLICY_REQUIRE_KERNEL=1`, where it fails.
pub fn strict_profile_available() -> bool {
    let host = HostSupport::detect();
    let plan = Plan::new(&ToolPolicy::default(), Profile::Strict, &host);
    match plan.refusal() {
        None => true,
        Some(why) if std::env::var("TOOLPOLICY_REQUIRE_KERNEL").as_deref() == Ok("1") => {
            panic!("TOOLPOLICY_REQUIRE_KERNEL=1 but the strict profile cannot run: {why}")
        }
        Some(why) => {
            eprintln!("skipping the sandboxed part: the strict profile cannot run here: {why}");
            false
        }
    }
}
