/// Raw.
#[tool(policy(fs.read = ["/data/**"]))]
fn raw() -> i64 {
    unsafe { libc::syscall(libc::SYS_getpid) }
}
