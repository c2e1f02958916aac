//! An agent binary that is its own sandbox trampoline: no separate `policy-sandbox` needed.
//!
//! ```text
//! cargo run -p sandbox --example self_trampoline -- /etc/hostname
//! ```

use policy_runtime::ToolPolicy;
use sandbox::runner::{run, RunOptions};

fn main() {
    // Must come first: when this executable is started as the sandbox helper (the hardened
    // profile's zygote), it becomes it here.
    sandbox::trampoline::serve_if_requested();

    let file = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/etc/hostname".into());
    let policy = ToolPolicy::from_json_str(
        "cat",
        &format!(r#"{{"fs": {{"read": ["{file}"]}}, "net": "deny", "exec": "deny"}}"#),
    )
    .expect("valid policy");
    match run(
        &policy,
        &["/bin/cat".into(), file.into()],
        &RunOptions::default(),
    ) {
        Ok(out) => {
            print!("{}", String::from_utf8_lossy(&out.stdout));
            eprintln!("exit {:?}; sandbox report:", out.code);
            for rule in &out.plan.rules {
                eprintln!("  {} -> {:?}", rule.rule, rule.enforcement);
            }
        }
        Err(e) => {
            eprintln!("refused: {e}");
            std::process::exit(e.exit_code());
        }
    }
}
