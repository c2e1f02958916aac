//! What names mean inside one tool body: `use` declarations made in the body, names bound
//! locally (which shadow globs), functions declared in `extern` blocks, and `let` bindings whose
//! type the catalog knows.
//!
//! The body is all tier 1 can see, so a path is resolved only when it is absolute (`::std::fs`,
//! `std::fs`, `tokio::net`, ...) or goes through a `use` declared in the body. Anything else
//! (module-level imports, `crate::` helpers) is left to tier 2; guessing here would turn a user's
//! own `fs::write` into a build error.

use std::collections::{HashMap, HashSet};

use policy_runtime::capability::{type_yielded_by, TypeMethods};
use policy_runtime::lint_syntax::{bind_names, segment_names, strip_type};
use syn::visit::Visit;

use super::walk::MAX_DEPTH;

/// Crates whose paths are taken as absolute when they start a path.
const EXTERNAL_ROOTS: &[&str] = &[
    "std",
    "core",
    "alloc",
    "tokio",
    "reqwest",
    "ureq",
    "hyper",
    "hyper_util",
    "libc",
    "libloading",
    "nix",
    "rusqlite",
];

/// Name bindings of one body, collected in a first pass (scope-insensitive: a body is small and
/// a name reused for two meanings is rare enough that the conservative reading is fine).
#[derive(Default)]
pub(crate) struct Scope {
    aliases: HashMap<String, String>,
    globs: Vec<String>,
    locals: HashSet<String>,
    pub(crate) foreign_fns: HashSet<String>,
    /// `let` bindings whose value has a catalogued type.
    pub(crate) typed_lets: HashMap<String, &'static TypeMethods>,
}

impl Scope {
    pub(crate) fn of(block: &syn::Block) -> Scope {
        let mut scope = Scope::default();
        let mut collector = Collector {
            scope: &mut scope,
            depth: 0,
        };
        collector.visit_block(block);
        scope
    }

    /// The fully qualified form of `path`, when the body says what it is.
    pub(crate) fn resolve(&self, path: &syn::Path) -> Option<String> {
        let segments = segment_names(path);
        self.resolve_segments(&segments, path.leading_colon.is_some())
    }

    pub(crate) fn resolve_segments(&self, segments: &[String], absolute: bool) -> Option<String> {
        let (first, rest) = segments.split_first()?;
        if absolute {
            return Some(segments.join("::"));
        }
        if let Some(target) = self.aliases.get(first) {
            return Some(join(target, rest));
        }
        if self.locals.contains(first) {
            return None;
        }
        if EXTERNAL_ROOTS.contains(&first.as_str()) {
            return Some(segments.join("::"));
        }
        if rest.is_empty() {
            // Only a glob import can bring a bare name into the body; take the first glob that
            // makes it a catalogued path.
            return self
                .globs
                .iter()
                .map(|g| join(g, segments))
                .find(|p| policy_runtime::capability::classify_path(p).is_some());
        }
        None
    }

    pub(crate) fn is_local(&self, name: &str) -> bool {
        self.locals.contains(name)
    }
}

fn join(base: &str, rest: &[String]) -> String {
    let mut out = base.to_string();
    for r in rest {
        out.push_str("::");
        out.push_str(r);
    }
    out
}

struct Collector<'a> {
    scope: &'a mut Scope,
    /// Nesting of the node being visited: the collector stops where the walker does
    /// ([`MAX_DEPTH`]), which reports the body as unanalysable there.
    depth: usize,
}

/// Visits `$node` one level deeper, unless that is too deep.
macro_rules! guarded {
    ($name:ident, $ty:ty) => {
        fn $name(&mut self, node: &'ast $ty) {
            self.depth += 1;
            if self.depth <= MAX_DEPTH {
                syn::visit::$name(self, node);
            }
            self.depth -= 1;
        }
    };
}

impl Collector<'_> {
    fn use_tree(&mut self, prefix: &[String], absolute: bool, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                let mut next = prefix.to_vec();
                next.push(p.ident.to_string());
                self.use_tree(&next, absolute, &p.tree);
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                if name == "self" {
                    if let Some(last) = prefix.last() {
                        let last = last.clone();
                        self.alias(last, prefix, absolute);
                    }
                } else {
                    let mut full = prefix.to_vec();
                    full.push(name.clone());
                    self.alias(name, &full, absolute);
                }
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.to_vec();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.alias(r.rename.to_string(), &full, absolute);
            }
            syn::UseTree::Glob(_) => {
                if let Some(target) = self.scope.resolve_segments(prefix, absolute) {
                    self.scope.globs.push(target);
                }
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, absolute, t);
                }
            }
        }
    }

    fn alias(&mut self, name: String, full: &[String], absolute: bool) {
        if name == "_" {
            return;
        }
        match self.scope.resolve_segments(full, absolute) {
            Some(target) => {
                self.scope.aliases.insert(name, target);
            }
            // `use crate::x as y` or `use super::fs`: unknown here, and it shadows any
            // external root of the same name.
            None => {
                self.scope.locals.insert(name);
            }
        }
    }

    fn bind_pat(&mut self, pat: &syn::Pat) {
        bind_names(pat, &mut self.scope.locals);
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    guarded!(visit_expr, syn::Expr);
    guarded!(visit_type, syn::Type);
    guarded!(visit_pat, syn::Pat);
    guarded!(visit_stmt, syn::Stmt);
    guarded!(visit_item, syn::Item);

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&[], u.leading_colon.is_some(), &u.tree);
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        self.bind_pat(&local.pat);
        if let (syn::Pat::Ident(id), Some(init)) = (strip_type(&local.pat), &local.init) {
            if let Some(ty) = self.scope.type_of(&init.expr) {
                self.scope.typed_lets.insert(id.ident.to_string(), ty);
            }
        }
        syn::visit::visit_local(self, local);
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        for p in &c.inputs {
            self.bind_pat(p);
        }
        syn::visit::visit_expr_closure(self, c);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.scope.locals.insert(f.sig.ident.to_string());
        for input in &f.sig.inputs {
            if let syn::FnArg::Typed(t) = input {
                self.bind_pat(&t.pat);
            }
        }
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.scope.locals.insert(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
    }

    fn visit_foreign_item_fn(&mut self, f: &'ast syn::ForeignItemFn) {
        self.scope.foreign_fns.insert(f.sig.ident.to_string());
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        self.bind_pat(&arm.pat);
        syn::visit::visit_arm(self, arm);
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        self.bind_pat(&f.pat);
        syn::visit::visit_expr_for_loop(self, f);
    }
}

impl Scope {
    /// The catalogued type of a value: `T::ctor(..)`, a builder chain on one, or a `let` bound
    /// to one. `None` when unknown, which makes every method call on it unflagged.
    pub(crate) fn type_of(&self, expr: &syn::Expr) -> Option<&'static TypeMethods> {
        // Down the receivers to the value the chain starts from, then back up through the
        // methods: a loop, since a chain can be thousands of calls long.
        let mut methods = Vec::new();
        let mut current = expr;
        let base = loop {
            match current {
                syn::Expr::MethodCall(m) => {
                    methods.push(&m.method);
                    current = &m.receiver;
                }
                syn::Expr::Paren(p) => current = &p.expr,
                syn::Expr::Reference(r) => current = &r.expr,
                syn::Expr::Try(t) => current = &t.expr,
                syn::Expr::Call(c) => match c.func.as_ref() {
                    syn::Expr::Path(p) if p.qself.is_none() => {
                        break type_yielded_by(&self.resolve(&p.path)?)?
                    }
                    _ => return None,
                },
                syn::Expr::Path(p) if p.qself.is_none() => {
                    let ident = p.path.get_ident()?;
                    break self.typed_lets.get(&ident.to_string()).copied()?;
                }
                _ => return None,
            }
        };
        methods
            .iter()
            .rev()
            .all(|m| base.chains_through(&m.to_string()))
            .then_some(base)
    }
}
