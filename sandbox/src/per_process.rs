//! State that belongs to one process: a child forked from it (without `exec`) gets its own.
//!
//! The hardened profile's zygotes and scratch slots are the agent process's: a forked child
//! must not use, kill or empty them, and a thread of the parent may have held their lock at
//! the fork, which would leave it taken for good in the child. So each process publishes a
//! registry of its own, marked with its pid; a process that finds one of another pid starts a
//! new one and leaves the old one untouched (leaked: it is the parent's, and its lock may be
//! held).

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard};

struct Owned<T> {
    owner: u32,
    value: Mutex<T>,
}

/// A `T` of the current process's own (see the module docs); starts as `T::default()`.
pub(crate) struct PerProcess<T> {
    current: AtomicPtr<Owned<T>>,
}

impl<T: Default> PerProcess<T> {
    /// An empty registry, for a `static`.
    pub(crate) const fn new() -> PerProcess<T> {
        PerProcess {
            current: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// This process's value, locked; `made` runs once in the process that makes it.
    pub(crate) fn lock(&'static self, made: impl Fn()) -> MutexGuard<'static, T> {
        let me = std::process::id();
        loop {
            let current = self.current.load(Ordering::Acquire);
            // SAFETY: a published value is never freed.
            if let Some(owned) = unsafe { current.as_ref() } {
                if owned.owner == me {
                    return owned.value.lock().unwrap_or_else(|e| e.into_inner());
                }
            }
            let fresh = Box::into_raw(Box::new(Owned {
                owner: me,
                value: Mutex::new(T::default()),
            }));
            if self
                .current
                .compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // SAFETY: `fresh` was not published; it is ours alone.
                drop(unsafe { Box::from_raw(fresh) });
            } else {
                made();
            }
        }
    }

    /// This process's value when it has one and no thread holds it (at exit, say); never
    /// waits, never makes one.
    pub(crate) fn try_lock_own(&'static self) -> Option<MutexGuard<'static, T>> {
        let current = self.current.load(Ordering::Acquire);
        // SAFETY: a published value is never freed.
        let owned = unsafe { current.as_ref() }?;
        if owned.owner != std::process::id() {
            return None;
        }
        owned.value.try_lock().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static VALUE: PerProcess<Vec<u32>> = PerProcess::new();

    #[test]
    fn a_forked_child_starts_its_own_and_leaves_the_parents() {
        VALUE.lock(|| {}).push(1);
        // Held across the fork: the child must not wait for it.
        let held = VALUE.lock(|| {});
        // SAFETY: the child only uses this module (no other thread's lock) and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let ok = VALUE.lock(|| {}).is_empty() && VALUE.try_lock_own().is_some();
            // SAFETY: ending the child without running the parent's exit handlers.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        drop(held);
        let mut status = 0;
        // SAFETY: waiting for our child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_eq!(*VALUE.lock(|| {}), vec![1]);
    }
}
