/// Spins.
#[tool(policy(net = deny))]
fn spin() {
    unsafe { core::arch::asm!("nop") }
}
