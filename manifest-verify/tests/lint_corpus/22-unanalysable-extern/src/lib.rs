mod ffi {
    extern "C" {
        pub fn do_things(n: i32) -> i32;
    }
}

/// Native.
#[tool(policy(net = deny))]
fn native() -> i32 {
    unsafe { ffi::do_things(1) }
}
