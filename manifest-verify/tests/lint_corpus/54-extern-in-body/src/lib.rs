/// Calls a foreign function declared in its own body.
#[tool(policy(net = deny))]
fn native() -> i32 {
    extern "C" {
        fn abs(n: i32) -> i32;
    }
    unsafe { abs(-1) }
}
