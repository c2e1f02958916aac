//! One shared parse per distinct glob text.
//!
//! Manifests repeat globs: thousands of tools read the same few directories. Every [`Glob`]
//! built from the same text shares one parsed form, so a 100,000-tool manifest holds each
//! distinct glob once, two manifests compared side by side share theirs, and equality of
//! interned globs is usually settled by one pointer comparison.
//!
//! The table holds weak references: a glob no longer used anywhere is freed, and its entry is
//! swept when the table has doubled since the last sweep (so sweeping costs O(1) per insert).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::{parse, Component, Glob, GlobError, GlobInner};

struct Table {
    globs: HashMap<Box<str>, Weak<GlobInner>>,
    sweep_at: usize,
}

/// Sweeping below this many entries is not worth it.
const MIN_SWEEP: usize = 1024;

fn table() -> &'static Mutex<Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        Mutex::new(Table {
            globs: HashMap::new(),
            sweep_at: MIN_SWEEP,
        })
    })
}

/// The glob of `text`: the shared one when a live glob has this text, otherwise a new parse.
pub(super) fn glob(text: &str) -> Result<Glob, GlobError> {
    // A poisoned lock only means another thread panicked while holding it; the table itself is
    // always consistent (each step leaves a valid map), so keep using it.
    let lookup = |table: &Table| table.globs.get(text).and_then(Weak::upgrade);
    if let Some(inner) = lookup(&table().lock().unwrap_or_else(|e| e.into_inner())) {
        return Ok(Glob { inner });
    }
    // Parse outside the lock: a long glob must not hold up other threads.
    let components: Vec<Component> = parse(text)?;
    let fresh = Arc::new(GlobInner {
        text: text.into(),
        components,
    });
    let mut table = table().lock().unwrap_or_else(|e| e.into_inner());
    // Another thread may have interned the same text meanwhile: keep one.
    if let Some(inner) = lookup(&table) {
        return Ok(Glob { inner });
    }
    if table.globs.len() >= table.sweep_at {
        table.globs.retain(|_, weak| weak.strong_count() > 0);
        table.sweep_at = (table.globs.len() * 2).max(MIN_SWEEP);
    }
    table.globs.insert(text.into(), Arc::downgrade(&fresh));
    Ok(Glob { inner: fresh })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_share_one_parse_and_dead_ones_are_swept() {
        let a = Glob::new("/intern/test/**").unwrap();
        let b = Glob::new("/intern/test/**").unwrap();
        assert!(Arc::ptr_eq(&a.inner, &b.inner));
        let c = Glob::new("/intern/other/*").unwrap();
        assert!(!Arc::ptr_eq(&a.inner, &c.inner));
        // Dropped globs do not keep their entries alive past a sweep.
        drop((a, b, c));
        for i in 0..(4 * MIN_SWEEP) {
            drop(Glob::new(&format!("/intern/sweep/{i}")).unwrap());
        }
        let len = table().lock().unwrap().globs.len();
        assert!(len < 4 * MIN_SWEEP, "{len} entries after sweeping");
    }
}
