//! What names mean inside one body: its `use` declarations, the names it binds (parameters,
//! `let`, closures, patterns), the items and `extern` functions it declares, and the values
//! whose type it states or builds. Collected in a first pass, scope-insensitively (a body is
//! small, and a name reused for two meanings is rare enough that the conservative reading is
//! fine); whatever leaves the body goes to the tier's [`Names`].

use std::collections::{HashMap, HashSet};

use syn::visit::Visit;

use super::capability::{
    classify_path, type_methods, type_yielded_by, TypeMethods, TRANSPARENT_METHODS,
};
use super::names::{Named, Names};
use super::syntax::{bind_names, segment_names, strip_type};

/// How many `use` declarations of the body one resolution follows: a backstop behind the
/// body's own cycles (`use a as b; use b as a;`).
const MAX_HOPS: usize = 16;

/// The parameters of the function whose body is walked: their names are locals (a parameter
/// called `write` is not `std::fs::write`), and their written types give receivers a type
/// (`p: &Path` makes `p.exists()` a read).
#[derive(Clone, Debug, Default)]
pub struct Params {
    names: Vec<String>,
    typed: Vec<(String, syn::Path)>,
}

impl Params {
    /// The parameters of `sig`.
    ///
    /// ```
    /// use policy_analysis::lint::scope::Params;
    ///
    /// let f: syn::ItemFn = syn::parse_quote!(fn f(p: &std::path::Path, (a, b): (u8, u8)) {});
    /// let params = Params::of(&f.sig);
    /// assert_eq!(params.names(), ["p", "a", "b"]);
    /// ```
    pub fn of(sig: &syn::Signature) -> Params {
        let mut params = Params::default();
        for input in &sig.inputs {
            let syn::FnArg::Typed(t) = input else {
                continue;
            };
            let mut names = HashSet::new();
            bind_names(&t.pat, &mut names);
            let mut names: Vec<String> = names.into_iter().collect();
            names.sort();
            if let (syn::Pat::Ident(id), Some(path)) = (t.pat.as_ref(), type_path(&t.ty)) {
                params.typed.push((id.ident.to_string(), path.clone()));
                params.names.push(id.ident.to_string());
            } else {
                params.names.extend(names);
            }
        }
        params
    }

    /// The names the parameters bind.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// The path of a type, through references (`&Path` is `Path`) and the smart pointers whose
/// methods are their content's (`Box<T>`, `Arc<T>`, `Rc<T>`).
pub fn type_path(ty: &syn::Type) -> Option<&syn::Path> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if ["Box", "Arc", "Rc"].contains(&last.ident.to_string().as_str()) {
                if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                    if let Some(syn::GenericArgument::Type(inner)) = a.args.first() {
                        return type_path(inner);
                    }
                }
            }
            Some(&p.path)
        }
        syn::Type::Reference(r) => type_path(&r.elem),
        syn::Type::Paren(p) => type_path(&p.elem),
        _ => None,
    }
}

/// The target of a `use` in the body, resolved when a path goes through it.
#[derive(Clone, Debug)]
struct UsePath {
    segs: Vec<String>,
    absolute: bool,
}

/// What a method call's receiver is known to be.
#[derive(Clone, Debug)]
pub(crate) enum Recv<T> {
    /// A value of a type of the analysed code.
    Internal(T),
    /// A value of a type from elsewhere (std, a registry crate, a generic parameter).
    External,
    /// A value reached through traits (`dyn T`, `impl T`, a generic `S: T`): any impl of the
    /// traits in the analysed code may run.
    Dyn(Vec<String>),
    Unknown,
}

/// The names of one body, and the tier's resolution for everything else.
pub struct Scope<'n, R: Names> {
    pub(crate) names: &'n R,
    uses: HashMap<String, UsePath>,
    globs: Vec<UsePath>,
    /// Names bound as values inside the body: `let`, closure and pattern bindings, local `fn`s.
    locals: HashSet<String>,
    /// Parameters (of the function and of `fn`s nested in the body). Unlike a `let`, a
    /// parameter is shadowed by the body's own imports, globs included: rustc resolves
    /// `fn f(read: F) { use std::fs::*; read(p) }` to `std::fs::read`.
    params: HashSet<String>,
    /// Items declared in the body that can start a path (`mod`, `struct`, `enum`, ...).
    items: HashSet<String>,
    /// Functions declared in the body's `extern` blocks.
    foreign: HashSet<String>,
    /// Values with a catalogued type (`let o = OpenOptions::new()`, `p: &Path`).
    typed: HashMap<String, &'static TypeMethods>,
    /// Values whose type the body states (parameters, `let x: T`, `let x = T { .. }`).
    receivers: HashMap<String, Recv<R::Type>>,
}

impl<'n, R: Names> Scope<'n, R> {
    /// The names of `block`, the body of a function with `params`; the first pass stops
    /// `max_depth` levels deep, where the walker does.
    pub fn of(names: &'n R, params: &Params, block: &syn::Block, max_depth: usize) -> Self {
        let mut scope = Scope::empty(names);
        scope.params.extend(params.names.iter().cloned());
        Collector {
            scope: &mut scope,
            depth: 0,
            max_depth,
        }
        .visit_block(block);
        for (name, ty) in &params.typed {
            scope.bind_type(name, ty);
        }
        for (name, traits) in names.trait_params() {
            scope
                .receivers
                .insert(name.clone(), Recv::Dyn(traits.clone()));
        }
        scope
    }

    /// A scope that declares nothing (a `macro_rules!` transcriber).
    pub fn empty(names: &'n R) -> Self {
        Scope {
            names,
            uses: HashMap::new(),
            globs: Vec::new(),
            locals: HashSet::new(),
            params: HashSet::new(),
            items: HashSet::new(),
            foreign: HashSet::new(),
            typed: HashMap::new(),
            receivers: HashMap::new(),
        }
    }

    /// Whether `name` is bound as a value in the body (a parameter, a `let`, a closure input).
    pub fn is_local(&self, name: &str) -> bool {
        self.locals.contains(name) || self.params.contains(name)
    }

    /// What `path` names, as written in the body.
    pub fn resolve(&self, path: &syn::Path) -> Named<R::Node, R::Type> {
        self.resolve_segments(&segment_names(path), path.leading_colon.is_some())
    }

    /// What `segs` names, as written in the body; `absolute` for a leading `::`.
    pub fn resolve_segments(&self, segs: &[String], absolute: bool) -> Named<R::Node, R::Type> {
        self.resolve_at(segs, absolute, 0)
    }

    fn resolve_at(&self, segs: &[String], absolute: bool, hops: usize) -> Named<R::Node, R::Type> {
        let Some((first, rest)) = segs.split_first() else {
            return Named::Unknown;
        };
        if absolute {
            return self.names.resolve(segs, true);
        }
        if first == "Self" {
            return match (self.names.self_type(), rest.first()) {
                (Some(ty), Some(name)) if rest.len() == 1 => {
                    match self.names.associated(&ty, name) {
                        Some(nodes) => Named::Nodes(nodes.to_vec()),
                        None => Named::Unknown,
                    }
                }
                _ => Named::Unknown,
            };
        }
        if let Some(u) = self.uses.get(first) {
            if hops >= MAX_HOPS {
                return Named::Unknown;
            }
            let full: Vec<String> = u.segs.iter().chain(rest).cloned().collect();
            return self.resolve_at(&full, u.absolute, hops + 1);
        }
        if rest.is_empty() && self.locals.contains(first) {
            return Named::Unknown;
        }
        if !rest.is_empty() && self.items.contains(first) {
            return Named::Unknown;
        }
        if rest.is_empty() && self.foreign.contains(first) {
            return Named::Foreign(first.clone());
        }
        // A glob of the body (`use std::fs::*`) brings in the catalogued names under it, ahead
        // of the parameters and the module's names.
        if hops < MAX_HOPS {
            for glob in &self.globs {
                let full: Vec<String> = glob.segs.iter().chain(segs).cloned().collect();
                if let Named::External(path) = self.resolve_at(&full, glob.absolute, hops + 1) {
                    if classify_path(&path).is_some() || type_yielded_by(&path).is_some() {
                        return Named::External(path);
                    }
                }
            }
        }
        if rest.is_empty() && self.params.contains(first) {
            return Named::Unknown;
        }
        self.names.resolve(segs, false)
    }

    /// The catalogued type of a value: `T::ctor(..)`, a builder chain on one, a binding of one
    /// (a `let`, a typed parameter) or a field of such a type. `None` when unknown, which makes
    /// every method call on it unflagged.
    pub fn type_of(&self, expr: &syn::Expr) -> Option<&'static TypeMethods> {
        // Else a value of our own type that derefs to a catalogued one.
        self.chain_type(expr)
            .or_else(|| self.deref_methods(self.receiver(expr)))
    }

    /// The catalogued methods a value of our type reaches through `Deref` (a newtype over
    /// `PathBuf`, or over such a newtype).
    fn deref_methods(&self, recv: Recv<R::Type>) -> Option<&'static TypeMethods> {
        let Recv::Internal(mut ty) = recv else {
            return None;
        };
        for _ in 0..MAX_HOPS {
            match self.names.deref_target(&ty) {
                Named::External(path) => return methods_of_type(&path),
                Named::Type(next) => ty = next,
                _ => return None,
            }
        }
        None
    }

    fn chain_type(&self, expr: &syn::Expr) -> Option<&'static TypeMethods> {
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
                    syn::Expr::Path(p) if p.qself.is_none() => match self.resolve(&p.path) {
                        Named::External(path) => break type_yielded_by(&path)?,
                        // A function of ours declared to return a catalogued type.
                        Named::Nodes(nodes) => match self.names.returns(&nodes) {
                            Named::External(path) => break methods_of_type(&path)?,
                            _ => return None,
                        },
                        _ => return None,
                    },
                    _ => return None,
                },
                syn::Expr::Path(p) if p.qself.is_none() => {
                    let ident = p.path.get_ident()?;
                    break self.typed.get(&ident.to_string()).copied()?;
                }
                syn::Expr::Field(f) => match self.field_type(f)? {
                    Named::External(path) => break methods_of_type(&path)?,
                    _ => return None,
                },
                _ => return None,
            }
        };
        methods
            .iter()
            .rev()
            .all(|m| base.chains_through(&m.to_string()))
            .then_some(base)
    }

    /// What the type of `base.field` names, when `base` is a value of a type of the analysed
    /// code.
    fn field_type(&self, f: &syn::ExprField) -> Option<Named<R::Node, R::Type>> {
        let Recv::Internal(ty) = self.receiver(&f.base) else {
            return None;
        };
        let syn::Member::Named(name) = &f.member else {
            return None;
        };
        Some(self.names.field(&ty, &name.to_string()))
    }

    /// The traits through which `base.field` is reached, when `base` is a value of a type of
    /// the analysed code.
    fn field_traits(&self, f: &syn::ExprField) -> Option<Vec<String>> {
        let Recv::Internal(ty) = self.receiver(&f.base) else {
            return None;
        };
        let syn::Member::Named(name) = &f.member else {
            return None;
        };
        self.names.field_traits(&ty, &name.to_string())
    }

    /// What the receiver of a method call is, as far as the body says: down the chain of
    /// method calls to the value it starts from, then back up through the declared return
    /// types (a loop, since a chain can be thousands of calls long).
    pub(crate) fn receiver(&self, expr: &syn::Expr) -> Recv<R::Type> {
        let mut methods = Vec::new();
        let mut expr = expr;
        loop {
            match expr {
                syn::Expr::Paren(syn::ExprParen { expr: inner, .. })
                | syn::Expr::Reference(syn::ExprReference { expr: inner, .. })
                | syn::Expr::Try(syn::ExprTry { expr: inner, .. }) => expr = inner,
                syn::Expr::MethodCall(m) => {
                    methods.push(m.method.to_string());
                    expr = &m.receiver;
                }
                _ => break,
            }
        }
        let mut recv = self.base_receiver(expr);
        for method in methods.iter().rev() {
            if TRANSPARENT_METHODS.contains(&method.as_str()) {
                continue;
            }
            recv = match recv {
                Recv::Internal(ty) => match self.names.associated(&ty, method) {
                    Some(nodes) => recv_of(self.names.returns(nodes)),
                    None => Recv::Unknown,
                },
                _ => Recv::Unknown,
            };
        }
        recv
    }

    fn base_receiver(&self, expr: &syn::Expr) -> Recv<R::Type> {
        match expr {
            syn::Expr::Path(p) if p.qself.is_none() => match p.path.get_ident() {
                Some(id) if id == "self" => match self.names.self_type() {
                    Some(ty) => Recv::Internal(ty),
                    None => Recv::Unknown,
                },
                Some(id) => self
                    .receivers
                    .get(&id.to_string())
                    .cloned()
                    .unwrap_or(Recv::Unknown),
                None => Recv::Unknown,
            },
            // `T { .. }` and `T(..)`: a value of the named type.
            syn::Expr::Struct(s) => self.recv_of_type(&s.path),
            syn::Expr::Call(c) => match c.func.as_ref() {
                syn::Expr::Path(p) if p.qself.is_none() => match self.resolve(&p.path) {
                    Named::Type(ty) => Recv::Internal(ty),
                    // What the function is declared to return.
                    Named::Nodes(nodes) => recv_of(self.names.returns(&nodes)),
                    _ => Recv::Unknown,
                },
                _ => Recv::Unknown,
            },
            syn::Expr::Lit(_) => Recv::External,
            syn::Expr::Field(f) => {
                if let Some(traits) = self.field_traits(f) {
                    return Recv::Dyn(traits);
                }
                match self.field_type(f) {
                    Some(named) => recv_of(named),
                    None => Recv::Unknown,
                }
            }
            _ => Recv::Unknown,
        }
    }

    /// A value whose type is written as `path`: ours, or someone else's (std, a registry crate,
    /// a generic parameter).
    pub(crate) fn recv_of_type(&self, path: &syn::Path) -> Recv<R::Type> {
        if path.is_ident("Self") {
            return match self.names.self_type() {
                Some(ty) => Recv::Internal(ty),
                None => Recv::Unknown,
            };
        }
        match self.resolve(path) {
            Named::Type(ty) => Recv::Internal(ty),
            Named::External(_) => Recv::External,
            _ => Recv::Unknown,
        }
    }

    /// Records that `name` holds a value of the type written as `ty`.
    fn bind_type(&mut self, name: &str, ty: &syn::Path) {
        let recv = self.recv_of_type(ty);
        self.receivers.insert(name.to_string(), recv);
        if let Named::External(path) = self.resolve(ty) {
            if let Some(methods) = methods_of_type(&path) {
                self.typed.insert(name.to_string(), methods);
            }
        }
    }
}

/// The names of the traits in a bound list (`Sink + Send` gives `Sink`, `Send`), as the
/// walker matches them against the analysed code's traits.
pub fn bound_trait_names(
    bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, syn::Token![+]>,
) -> Vec<String> {
    bounds
        .iter()
        .filter_map(|b| match b {
            syn::TypeParamBound::Trait(t) => t.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// The traits of a trait-object or `impl Trait` type, through references and
/// `Box`/`Arc`/`Rc`: `Box<dyn Sink>` is reached through `Sink`.
pub fn trait_objects(ty: &syn::Type) -> Vec<String> {
    match ty {
        syn::Type::Reference(r) => trait_objects(&r.elem),
        syn::Type::Paren(p) => trait_objects(&p.elem),
        syn::Type::TraitObject(t) => bound_trait_names(&t.bounds),
        syn::Type::ImplTrait(t) => bound_trait_names(&t.bounds),
        syn::Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return Vec::new();
            };
            let wrapper = ["Box", "Arc", "Rc"].contains(&last.ident.to_string().as_str());
            match &last.arguments {
                syn::PathArguments::AngleBracketed(a) if wrapper => match a.args.first() {
                    Some(syn::GenericArgument::Type(inner)) => trait_objects(inner),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// A value of what `named` names.
fn recv_of<N, T>(named: Named<N, T>) -> Recv<T> {
    match named {
        Named::Type(ty) => Recv::Internal(ty),
        Named::External(_) => Recv::External,
        _ => Recv::Unknown,
    }
}

/// The catalogued methods of a value of type `path`; `PathBuf` derefs to `Path`, whose
/// methods read the same.
fn methods_of_type(path: &str) -> Option<&'static TypeMethods> {
    type_methods(&path.replace("std::path::PathBuf", "std::path::Path"))
}

/// The first pass over a body.
struct Collector<'s, 'n, R: Names> {
    scope: &'s mut Scope<'n, R>,
    /// Nesting of the node being visited: the collector stops where the walker does.
    depth: usize,
    max_depth: usize,
}

/// Visits `$node` one level deeper, unless that is too deep.
macro_rules! guarded {
    ($name:ident, $ty:ty) => {
        fn $name(&mut self, node: &'ast $ty) {
            self.depth += 1;
            if self.depth <= self.max_depth {
                syn::visit::$name(self, node);
            }
            self.depth -= 1;
        }
    };
}

impl<R: Names> Collector<'_, '_, R> {
    fn use_tree(&mut self, prefix: &[String], absolute: bool, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                let mut next = prefix.to_vec();
                next.push(p.ident.to_string());
                self.use_tree(&next, absolute, &p.tree);
            }
            syn::UseTree::Name(n) => {
                if n.ident == "self" {
                    if let Some(last) = prefix.last() {
                        self.alias(last.clone(), prefix.to_vec(), absolute);
                    }
                } else {
                    let mut full = prefix.to_vec();
                    full.push(n.ident.to_string());
                    self.alias(n.ident.to_string(), full, absolute);
                }
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.to_vec();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.alias(r.rename.to_string(), full, absolute);
            }
            syn::UseTree::Glob(_) => self.scope.globs.push(UsePath {
                segs: prefix.to_vec(),
                absolute,
            }),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, absolute, t);
                }
            }
        }
    }

    fn alias(&mut self, name: String, segs: Vec<String>, absolute: bool) {
        if name != "_" && !segs.is_empty() {
            self.scope.uses.insert(name, UsePath { segs, absolute });
        }
    }

    fn bind(&mut self, pat: &syn::Pat) {
        bind_names(pat, &mut self.scope.locals);
    }

    fn item(&mut self, ident: &syn::Ident) {
        self.scope.items.insert(ident.to_string());
    }
}

impl<'ast, R: Names> Visit<'ast> for Collector<'_, '_, R> {
    guarded!(visit_expr, syn::Expr);
    guarded!(visit_type, syn::Type);
    guarded!(visit_pat, syn::Pat);
    guarded!(visit_stmt, syn::Stmt);
    guarded!(visit_item, syn::Item);

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&[], u.leading_colon.is_some(), &u.tree);
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        self.bind(&local.pat);
        if let syn::Pat::Type(t) = &local.pat {
            if let syn::Pat::Ident(id) = t.pat.as_ref() {
                let traits = trait_objects(&t.ty);
                if !traits.is_empty() {
                    // `let s: Box<dyn Sink> = ..`: the impls of `Sink`, whatever the value.
                    self.scope
                        .receivers
                        .insert(id.ident.to_string(), Recv::Dyn(traits));
                    syn::visit::visit_local(self, local);
                    return;
                }
                if let Some(ty) = type_path(&t.ty) {
                    self.scope.bind_type(&id.ident.to_string(), ty);
                }
            }
        }
        if let (syn::Pat::Ident(id), Some(init)) = (strip_type(&local.pat), &local.init) {
            let name = id.ident.to_string();
            if let Some(ty) = self.scope.type_of(&init.expr) {
                self.scope.typed.insert(name.clone(), ty);
            }
            let recv = self.scope.receiver(&init.expr);
            if !matches!(recv, Recv::Unknown) {
                self.scope.receivers.insert(name, recv);
            }
        }
        syn::visit::visit_local(self, local);
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        for p in &c.inputs {
            self.bind(p);
        }
        syn::visit::visit_expr_closure(self, c);
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        self.bind(&arm.pat);
        syn::visit::visit_arm(self, arm);
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        self.bind(&f.pat);
        syn::visit::visit_expr_for_loop(self, f);
    }

    fn visit_expr_let(&mut self, l: &'ast syn::ExprLet) {
        self.bind(&l.pat);
        syn::visit::visit_expr_let(self, l);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.scope.locals.insert(f.sig.ident.to_string());
        let params = Params::of(&f.sig);
        self.scope.params.extend(params.names);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.item(&m.ident);
        syn::visit::visit_item_mod(self, m);
    }

    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        self.item(&s.ident);
        syn::visit::visit_item_struct(self, s);
    }

    fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
        self.item(&e.ident);
        syn::visit::visit_item_enum(self, e);
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        self.item(&t.ident);
        syn::visit::visit_item_trait(self, t);
    }

    fn visit_foreign_item_fn(&mut self, f: &'ast syn::ForeignItemFn) {
        self.scope.foreign.insert(f.sig.ident.to_string());
    }
}
