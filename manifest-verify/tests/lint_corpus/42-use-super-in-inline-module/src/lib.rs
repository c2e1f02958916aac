mod outer {
    use super::util::spawn_it;
    pub fn go() -> bool {
        spawn_it()
    }
}

mod util {
    use std::process::Command;
    pub fn spawn_it() -> bool {
        Command::new("deploy.sh").spawn().is_ok()
    }
}

/// Deploys.
#[tool(policy(exec = deny))]
fn deploy() -> bool {
    outer::go()
}
