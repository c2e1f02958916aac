//! Name resolution over the loaded modules: `crate`/`self`/`super`, module-level `use` aliases,
//! glob imports, re-exports (`pub use` is a `use` like any other), other crates of the
//! workspace, and everything else as an external path for the catalog.
//!
//! Each lookup of a name in a module is computed once and remembered
//! ([`Resolution`]): glob imports otherwise make resolution exponential, since every glob of a
//! module is itself resolved through the module's globs (`use core::arch::x86::*;
//! use core::arch::x86_64::*;` asks for `core` through both, again and again). A lookup that
//! reaches itself again (a cycle of globs or re-exports) contributes nothing on that branch.
//! A result that ran into such a cycle further up is remembered as provisional, with the
//! lookups it was cut at: it holds once each of those has resolved to nothing (the cut branch
//! then lost nothing), and is recomputed otherwise. That keeps a module of a thousand
//! `pub use child::*;` whose children each `use super::*;` (web-sys) linear too.

use std::cell::RefCell;
use std::collections::HashMap;

use policy_analysis::lint::capability::classify_path;

use super::program::{Def, ModId, NodeId, Program, UsePath};

/// What a path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Functions, methods or macros of the analysed code.
    Nodes(Vec<NodeId>),
    Module(ModId),
    /// A type of the analysed code: `(unit, name)`.
    Type(usize, String),
    /// A path outside the analysed code, fully qualified as far as known.
    External(String),
    /// A function declared in an `extern` block.
    Foreign(String),
    Unknown,
}

/// Recursion bound for `use` chains, a backstop behind cycle detection.
const MAX_DEPTH: u8 = 48;

/// A name looked up in a module, in the value namespace or not.
type Key = (ModId, String, bool);

/// A result that ran into active lookups, with those lookups (`None`: the depth bound, never
/// to be trusted).
type Provisional = (Target, Vec<Option<Key>>);

/// Memory of name lookups, kept by the [`Program`] for its lifetime.
#[derive(Default)]
pub(crate) struct Resolution {
    done: RefCell<HashMap<Key, Target>>,
    /// Results that ran into active lookups.
    provisional: RefCell<HashMap<Key, Provisional>>,
    /// Lookups under way, with their position on the lookup stack (from 1).
    active: RefCell<HashMap<Key, usize>>,
    /// The lookups under way, in stack order (position 1 first).
    stack: RefCell<Vec<Key>>,
    /// Positions of active lookups the current computation ran into (0: the depth bound).
    cuts: RefCell<Vec<usize>>,
}

impl Resolution {
    /// A provisional result whose cuts all resolved to nothing.
    fn settled(&self, key: &Key) -> Option<Target> {
        let provisional = self.provisional.borrow();
        let (target, cuts) = provisional.get(key)?;
        let done = self.done.borrow();
        cuts.iter()
            .all(|cut| {
                cut.as_ref()
                    .is_some_and(|k| done.get(k) == Some(&Target::Unknown))
            })
            .then(|| target.clone())
    }
}

impl Program {
    /// Resolves `segs` as written in `module`.
    pub(crate) fn resolve(&self, module: ModId, segs: &[String], absolute: bool) -> Target {
        self.resolve_at(module, segs, absolute, 0)
    }

    fn resolve_at(&self, module: ModId, segs: &[String], absolute: bool, depth: u8) -> Target {
        let Some((first, rest)) = segs.split_first() else {
            return Target::Unknown;
        };
        if depth > MAX_DEPTH {
            return Target::Unknown;
        }
        let value_ns = rest.is_empty();
        let mut target = if absolute {
            self.extern_crate(first)
        } else {
            self.first_segment(module, first, value_ns, depth)
        };
        for (i, seg) in rest.iter().enumerate() {
            let last = i + 1 == rest.len();
            target = self.step(target, seg, last, depth);
        }
        target
    }

    fn extern_crate(&self, name: &str) -> Target {
        match self.unit_named(name) {
            Some(u) => Target::Module(u.root),
            None => Target::External(name.to_string()),
        }
    }

    fn first_segment(&self, module: ModId, name: &str, value_ns: bool, depth: u8) -> Target {
        let m = &self.modules[module];
        match name {
            "crate" => return Target::Module(self.units[m.unit].root),
            "self" => return Target::Module(module),
            "super" => return Target::Module(m.parent.unwrap_or(module)),
            _ => {}
        }
        let local = self.in_module(module, name, value_ns, depth);
        if local != Target::Unknown {
            return local;
        }
        self.extern_crate(name)
    }

    /// `name` as defined in `module` itself or brought in by one of its globs, remembered.
    fn in_module(&self, module: ModId, name: &str, value_ns: bool, depth: u8) -> Target {
        let memo = &self.resolution;
        let key: Key = (module, name.to_string(), value_ns);
        if let Some(t) = memo.done.borrow().get(&key) {
            return t.clone();
        }
        if let Some(t) = memo.settled(&key) {
            return t;
        }
        if depth > MAX_DEPTH {
            memo.cuts.borrow_mut().push(0);
            return Target::Unknown;
        }
        if let Some(&at) = memo.active.borrow().get(&key) {
            memo.cuts.borrow_mut().push(at);
            return Target::Unknown;
        }
        memo.stack.borrow_mut().push(key.clone());
        let position = memo.stack.borrow().len();
        memo.active.borrow_mut().insert(key.clone(), position);
        let outer_cuts = memo.cuts.replace(Vec::new());
        let target = self.in_module_uncached(module, name, value_ns, depth);
        memo.active.borrow_mut().remove(&key);
        let mut cuts = memo.cuts.replace(outer_cuts);
        // Cuts at this lookup itself are exact: the branch that came back here adds nothing.
        cuts.retain(|&c| c < position);
        cuts.sort_unstable();
        cuts.dedup();
        if cuts.is_empty() {
            memo.provisional.borrow_mut().remove(&key);
            memo.done.borrow_mut().insert(key, target.clone());
        } else {
            let keys = {
                let stack = memo.stack.borrow();
                cuts.iter()
                    .map(|&c| c.checked_sub(1).map(|i| stack[i].clone()))
                    .collect()
            };
            memo.provisional
                .borrow_mut()
                .insert(key, (target.clone(), keys));
            memo.cuts.borrow_mut().extend(cuts);
        }
        memo.stack.borrow_mut().pop();
        target
    }

    fn in_module_uncached(&self, module: ModId, name: &str, value_ns: bool, depth: u8) -> Target {
        let m = &self.modules[module];
        if let Some(defs) = m.defs.get(name) {
            // A name can live in both namespaces (`struct S;` and `fn s`): a path that goes on
            // wants a module or type, a path that ends wants a function.
            let mut ordered: Vec<&Def> = defs.iter().collect();
            ordered.sort_by_key(|d| match (d, value_ns) {
                (Def::Node(_) | Def::Foreign(_), true) | (Def::Mod(_) | Def::Type(_), false) => 0,
                (Def::Use(_), _) => 1,
                _ => 2,
            });
            for def in ordered {
                let t = self.def_target(module, def, depth);
                if t != Target::Unknown {
                    return t;
                }
            }
        }
        for glob in &m.globs {
            match self.use_target(glob, depth + 1) {
                Target::Module(g) if g != module => {
                    let t = self.in_module(g, name, value_ns, depth + 1);
                    if t != Target::Unknown {
                        return t;
                    }
                }
                Target::External(base) => {
                    let candidate = format!("{base}::{name}");
                    if classify_path(&candidate).is_some() {
                        return Target::External(candidate);
                    }
                }
                _ => {}
            }
        }
        Target::Unknown
    }

    fn def_target(&self, module: ModId, def: &Def, depth: u8) -> Target {
        match def {
            Def::Node(n) => Target::Nodes(vec![*n]),
            Def::Mod(m) => Target::Module(*m),
            Def::Type(t) => Target::Type(self.modules[module].unit, t.clone()),
            Def::Foreign(f) => Target::Foreign(f.clone()),
            Def::Use(u) => self.use_target(u, depth + 1),
        }
    }

    fn use_target(&self, u: &UsePath, depth: u8) -> Target {
        self.resolve_at(u.from, &u.segs, u.absolute, depth)
    }

    fn step(&self, target: Target, seg: &str, last: bool, depth: u8) -> Target {
        match target {
            Target::Module(m) if seg == "super" => {
                Target::Module(self.modules[m].parent.unwrap_or(m))
            }
            Target::Module(m) if seg == "self" => Target::Module(m),
            Target::Module(m) => self.in_module(m, seg, last, depth + 1),
            Target::Type(unit, ty) => match self.assoc.get(&(unit, ty)).and_then(|a| a.get(seg)) {
                Some(nodes) => Target::Nodes(nodes.clone()),
                None => Target::Unknown,
            },
            Target::External(base) => Target::External(format!("{base}::{seg}")),
            _ => Target::Unknown,
        }
    }
}
