//! The gate that runs before every body allocates nothing for an allowed call whose paths are
//! already in normal form, and only the rewritten string for one that is not: counted by a
//! global allocator, on this test's thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use policy_runtime::gate::check_args;
use policy_runtime::tool::{Access, PathArg};
use policy_runtime::ToolPolicy;
use serde_json::json;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded to the system allocator unchanged; the count is a
// const-initialized thread-local without a destructor, so touching it never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations_of(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn an_allowed_call_allocates_only_its_rewrites() {
    let fs = r#""fs": {"read": ["/srv/agent/data/**", "/srv/agent/src/**/*.rs"],
                       "write": ["/srv/agent/out/**"]}"#;
    // Without and with a net stance: under one, every string is also read for a URL scheme.
    for json in [format!("{{{fs}}}"), format!(r#"{{{fs}, "net": "deny"}}"#)] {
        let policy = ToolPolicy::from_json_str("p", &json).unwrap();
        allocations_per_call(&policy, &json);
    }
}

fn allocations_per_call(policy: &ToolPolicy, json: &str) {
    let typed = [
        PathArg {
            name: "src".into(),
            access: Access::Read,
        },
        PathArg {
            name: "dest".into(),
            access: Access::Write,
        },
    ];
    let normal = json!({
        "src": "/srv/agent/data/2024/jan.csv",
        "dest": "/srv/agent/out/r.md",
        "opts": {"include": ["/srv/agent/src/lib.rs"], "n": 3, "note": "text"},
    });
    let mut args = normal.clone();
    // The first call builds each list's automaton and reads the protected-path list.
    check_args(policy, &typed, &mut args, None).unwrap();

    let mut args = normal.clone();
    let n = allocations_of(|| check_args(policy, &typed, &mut args, None).unwrap());
    assert_eq!(
        n, 0,
        "{json}: an allowed call in normal form allocated {n} times"
    );
    assert_eq!(args, normal);

    // One path to rewrite: its normalized string, and the list of pending rewrites.
    let mut args = normal.clone();
    args["src"] = json!("/srv/agent/data/./2024/../2024/jan.csv");
    let n = allocations_of(|| check_args(policy, &typed, &mut args, None).unwrap());
    assert!(
        n <= 2,
        "{json}: a call with one rewrite allocated {n} times"
    );
    assert_eq!(args, normal);
}
