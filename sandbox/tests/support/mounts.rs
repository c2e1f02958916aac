//! `mount(2)` for the tests that change their own mount namespace (included with `#[path]`).

use std::path::Path;

/// Mounts `fstype` (or binds `source` when `flags` say so; `fstype` is then empty) at
/// `target`, or says which mount failed and why.
pub fn mount(
    source: &str,
    target: &Path,
    fstype: &str,
    flags: libc::c_ulong,
) -> Result<(), String> {
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL");
    let (source_c, target_c, fstype_c) = (c(source), c(&target.to_string_lossy()), c(fstype));
    // SAFETY: valid C strings; no data.
    let r = unsafe {
        libc::mount(
            source_c.as_ptr(),
            target_c.as_ptr(),
            fstype_c.as_ptr(),
            flags,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(format!(
            "mount {source} on {}: {}",
            target.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}
