use policy_macros::tool;

/// Calls a foreign function declared in the body.
#[tool(policy(net = deny))]
fn native() -> i32 {
    extern "C" {
        fn abs(n: i32) -> i32;
    }
    unsafe { abs(-1) }
}

fn main() {}
