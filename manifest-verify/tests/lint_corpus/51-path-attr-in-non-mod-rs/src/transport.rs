// In a non-mod-rs file, `#[path]` is relative to this file's directory (src/), not src/transport/.
#[path = "raw_socket.rs"]
mod raw;

#[cfg_attr(windows, path = "notify_windows.rs")]
#[cfg_attr(unix, path = "notify_unix.rs")]
mod notify_impl;

pub fn send(msg: &str) -> bool {
    raw::open(msg)
}

pub fn notify() -> bool {
    notify_impl::bell()
}
