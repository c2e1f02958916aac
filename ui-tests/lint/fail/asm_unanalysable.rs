use policy_macros::tool;

/// Inline assembly could do anything; the policy does not grant everything.
#[tool(policy(net = deny))]
fn spin() {
    unsafe { std::arch::asm!("nop") }
}

fn main() {}
