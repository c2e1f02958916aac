//! What one function or macro body does: the catalogued calls it makes directly, and the calls
//! into other nodes of the analysed code (the edges of the call graph).

use std::collections::{HashMap, HashSet};

use policy_runtime::capability::{
    classify_path, distinctive_method, is_unanalysable_macro, type_methods, type_yielded_by,
    Capability, Effect, TypeMethods, COMPILE_TIME_MACROS,
};
use policy_runtime::lint_syntax::{
    bind_names, chain_has_write, first_literal, is_literal_false, segment_names, strip_type, Args,
};
use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::visit::Visit;

use super::program::{ModId, NodeId, NodeKind, Program, UsePath};
use super::resolve::Target;

/// What a method call's receiver is known to be.
#[derive(Clone, Debug)]
enum Recv {
    /// A value of a type of the analysed code: `(unit, type name)`.
    Internal(usize, String),
    /// A value of a type from elsewhere (std, a registry crate).
    External,
    /// A value reached through traits (`dyn T`, `impl T`, a generic `S: T`): any impl of the
    /// traits in the analysed code may run.
    Dyn(Vec<String>),
    Unknown,
}

/// Names every Rust module sees without a `use`: the prelude's values and types, and the
/// primitive types. A call to one of them is never a name an item-level macro defined.
const PRELUDE: &[&str] = &[
    "Some",
    "None",
    "Ok",
    "Err",
    "drop",
    "Box",
    "Vec",
    "String",
    "Option",
    "Result",
    "Default",
    "Clone",
    "ToString",
    "ToOwned",
    "Iterator",
    "IntoIterator",
    "From",
    "Into",
    "TryFrom",
    "TryInto",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
    "AsRef",
    "AsMut",
    "Fn",
    "FnMut",
    "FnOnce",
    "Send",
    "Sync",
    "Sized",
    "Copy",
    "Drop",
    "Extend",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "f32",
    "f64",
    "bool",
    "char",
    "str",
    "Self",
    "self",
    "super",
    "crate",
    "std",
    "core",
    "alloc",
    "proc_macro",
];

/// `E` of a declared `Result<T, E>`.
fn result_error(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    a.args
        .iter()
        .filter_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .nth(1)
}

/// How many `Deref` impls a receiver is followed through (`Outer` → `Inner` → `PathBuf`).
const MAX_DEREF_STEPS: usize = 8;

/// Method names of std traits and collections: on a receiver of unknown type, a call to one of
/// these is taken as the std method, not as a same-named method of the analysed code (which
/// would connect every `reader.read(..)` to any `fn read(&self)` in the workspace).
const COMMON_STD_METHODS: &[&str] = &[
    "read",
    "write",
    "flush",
    "read_to_string",
    "read_to_end",
    "write_all",
    "next",
    "clone",
    "fmt",
    "drop",
    "from",
    "into",
    "eq",
    "cmp",
    "partial_cmp",
    "hash",
    "deref",
    "as_ref",
    "as_mut",
    "borrow",
    "default",
    "to_string",
    "to_owned",
    "len",
    "is_empty",
    "get",
    "get_mut",
    "insert",
    "remove",
    "push",
    "pop",
    "iter",
    "iter_mut",
    "into_iter",
    "map",
    "collect",
    "extend",
    "contains",
    "contains_key",
    "entry",
    "lock",
    "send",
    "recv",
    "take",
    "unwrap",
    "expect",
    "ok",
    "err",
    "join",
    "split",
    "parse",
    "as_str",
    "as_bytes",
    "clear",
];

/// How many macro invocations deep the arguments are still parsed as code. Each parse
/// buffers every token inside the invocation, so parsing `m!(m!(m!(...)))` at every level is
/// quadratic; below this depth the tokens are scanned instead, which reads each token once.
pub(crate) const MAX_PARSED_MACRO_DEPTH: usize = 4;

/// One thing a body does at one place.
#[derive(Clone, Debug)]
pub(crate) struct Site {
    pub(crate) kind: SiteKind,
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) len: usize,
}

/// A catalogued use or a call into the analysed code.
#[derive(Clone, Debug)]
pub(crate) enum SiteKind {
    Uses {
        call: String,
        effect: Effect,
        /// The first argument, when it is a string literal.
        literal: Option<String>,
    },
    Calls(Vec<NodeId>),
}

/// The sites of node `id`.
pub(crate) fn sites(program: &Program, id: NodeId) -> Vec<Site> {
    let node = &program.nodes[id];
    let mut walker = Walker {
        program,
        module: node.module,
        self_ty: None,
        uses: HashMap::new(),
        locals: HashSet::new(),
        typed: HashMap::new(),
        receivers: HashMap::new(),
        sites: Vec::new(),
        macro_depth: 0,
        generics: Vec::new(),
        ret: None,
    };
    match &node.kind {
        NodeKind::Fn {
            block,
            self_ty,
            params,
            dyn_params,
            generics,
            ret,
            rewritten_by,
        } => {
            walker.self_ty = self_ty.clone();
            walker.generics = generics.clone();
            walker.ret = ret.as_deref();
            if let Some((attr, line, column)) = rewritten_by {
                walker.sites.push(Site {
                    kind: SiteKind::Uses {
                        call: format!("{attr} (an attribute macro may rewrite the item)"),
                        effect: Effect::Unanalysable,
                        literal: None,
                    },
                    line: *line,
                    column: *column,
                    len: attr.len(),
                });
            }
            for (name, ty) in params {
                let recv = walker.recv_of_type(ty);
                walker.receivers.insert(name.clone(), recv);
                if let Target::External(path) = walker.path_target(ty) {
                    // `PathBuf` derefs to `Path`: the same methods read.
                    let path = path.replace("std::path::PathBuf", "std::path::Path");
                    if let Some(methods) = type_methods(&path) {
                        walker.typed.insert(name.clone(), methods);
                    }
                }
            }
            for (name, traits) in dyn_params {
                walker
                    .receivers
                    .insert(name.clone(), Recv::Dyn(traits.clone()));
            }
            let mut pre = Collector { w: &mut walker };
            pre.visit_block(block);
            walker.visit_block(block);
        }
        NodeKind::Macro { bodies } => {
            for body in bodies {
                walker.scan(body.clone());
            }
        }
    }
    walker.sites
}

struct Walker<'p> {
    program: &'p Program,
    module: ModId,
    self_ty: Option<String>,
    /// `use` declarations inside the body.
    uses: HashMap<String, UsePath>,
    locals: HashSet<String>,
    typed: HashMap<String, &'static TypeMethods>,
    /// Variables whose type the body states (parameters, `let x: T`, `let x = T { .. }`).
    receivers: HashMap<String, Recv>,
    sites: Vec<Site>,
    /// Macro invocations whose arguments are being parsed around the current point.
    macro_depth: usize,
    /// Generic parameters in scope, with their trait bounds' names.
    generics: Vec<(String, Vec<String>)>,
    /// The function's declared return type.
    ret: Option<&'p syn::Type>,
}

/// What a macro invocation is to the lint.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MacroKind {
    /// `asm!` and friends: reported, never passed.
    Unanalysable,
    /// `env!`, `include_str!` and friends: their arguments are text, not code.
    CompileTime,
    /// Anything else: its arguments are code of the body.
    Code,
}

fn site(kind: SiteKind, span: Span, len: usize) -> Site {
    let start = span.start();
    Site {
        kind,
        line: start.line,
        column: start.column + 1,
        len: len.max(1),
    }
}

impl Walker<'_> {
    fn resolve(&self, segs: &[String], absolute: bool) -> Target {
        let Some(first) = segs.first() else {
            return Target::Unknown;
        };
        if !absolute {
            if first == "Self" {
                return match &self.self_ty {
                    Some(ty) if segs.len() > 1 => {
                        let unit = self.program.modules[self.module].unit;
                        match self
                            .program
                            .assoc
                            .get(&(unit, ty.clone()))
                            .and_then(|a| a.get(&segs[1]))
                        {
                            Some(n) => Target::Nodes(n.clone()),
                            None => Target::Unknown,
                        }
                    }
                    _ => Target::Unknown,
                };
            }
            if let Some(u) = self.uses.get(first) {
                let mut full = u.segs.clone();
                full.extend(segs[1..].iter().cloned());
                return self.program.resolve(u.from, &full, u.absolute);
            }
            if segs.len() == 1 && self.locals.contains(first) {
                return Target::Unknown;
            }
            // `S::create(..)` with `S: Store`: every impl's `create`.
            if segs.len() == 2 {
                if let Some((_, traits)) = self.generics.iter().find(|(g, _)| g == first) {
                    let nodes = self.trait_methods(traits, &segs[1]);
                    if !nodes.is_empty() {
                        return Target::Nodes(nodes);
                    }
                }
            }
        }
        self.program.resolve(self.module, segs, absolute)
    }

    /// The functions named `name` of every impl of `traits` in the analysed code, and the
    /// traits' own default bodies.
    fn trait_methods(&self, traits: &[String], name: &str) -> Vec<NodeId> {
        let mut nodes = Vec::new();
        for t in traits {
            let impls = self.program.trait_impls.get(t).into_iter().flatten();
            let defaults = (0..self.program.units.len()).map(|u| (u, t.clone()));
            for key in impls.cloned().chain(defaults) {
                if let Some(found) = self.program.assoc.get(&key).and_then(|a| a.get(name)) {
                    nodes.extend(found.iter().copied());
                }
            }
        }
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    /// The `drop` of a type with an `impl Drop`: a value built here is dropped at the end of
    /// its scope (or at once, for a temporary).
    fn drop_edge(&mut self, unit: usize, ty: &str, span: Span) {
        if !self.program.drops.contains(&(unit, ty.to_string())) {
            return;
        }
        if let Some(nodes) = self
            .program
            .assoc
            .get(&(unit, ty.to_string()))
            .and_then(|a| a.get("drop"))
        {
            self.sites
                .push(site(SiteKind::Calls(nodes.clone()), span, ty.len()));
        }
    }

    /// Edges to the associated functions `names` of the type `recv` is (for `for`, `into`,
    /// `?`): the type's own, or every impl's through traits.
    fn implicit_edge(&mut self, recv: &Recv, names: &[&str], span: Span) {
        let mut nodes = Vec::new();
        for name in names {
            match recv {
                Recv::Internal(unit, ty) => {
                    if let Some(found) = self
                        .program
                        .assoc
                        .get(&(*unit, ty.clone()))
                        .and_then(|a| a.get(*name))
                    {
                        nodes.extend(found.iter().copied());
                    }
                }
                Recv::Dyn(traits) => nodes.extend(self.trait_methods(traits, name)),
                Recv::External | Recv::Unknown => {}
            }
        }
        if !nodes.is_empty() {
            self.sites.push(site(SiteKind::Calls(nodes), span, 1));
        }
    }

    /// Whether `segs`, written in this body, names nothing the analysed code defines while
    /// the module holds item-level macros whose items are not analysed: the call may go to
    /// one of those items. Returns the macros' description.
    fn hidden_by_item_macros(&self, segs: &[String], absolute: bool) -> Option<String> {
        let module = &self.program.modules[self.module];
        if absolute || module.opaque.is_empty() {
            return None;
        }
        let first = segs.first()?;
        let unit = &self.program.units[module.unit];
        if PRELUDE.contains(&first.as_str())
            || self.uses.contains_key(first)
            || self.locals.contains(first)
            || self.receivers.contains_key(first)
            || self.generics.iter().any(|(g, _)| g == first)
            || unit.deps.contains(first)
            || self.program.unit_named(first).is_some()
        {
            return None;
        }
        match self.program.resolve(self.module, &segs[..1], false) {
            Target::External(p) if p == *first => Some(module.opaque.join(", ")),
            _ => None,
        }
    }

    /// Reports `expr`, resolved to `target`, when only an item-level macro of the module can
    /// define it.
    fn hidden_call(&mut self, target: &Target, expr: &syn::ExprPath, span: Span, len: usize) {
        if expr.qself.is_some() {
            return;
        }
        let segs = segment_names(&expr.path);
        let absolute = expr.path.leading_colon.is_some();
        let macros = match target {
            Target::External(path) if classify_path(path).is_none() => {
                self.hidden_by_item_macros(&segs, absolute)
            }
            // `gen::save` where module `gen` holds item-level macros and no `save`.
            Target::Unknown => (1..segs.len())
                .rev()
                .find_map(|k| match self.resolve(&segs[..k], absolute) {
                    Target::Module(m) => Some(
                        Some(&self.program.modules[m].opaque)
                            .filter(|o| !o.is_empty())
                            .map(|o| o.join(", ")),
                    ),
                    _ => None,
                })
                .flatten(),
            _ => None,
        };
        let Some(macros) = macros else {
            return;
        };
        self.sites.push(site(
            SiteKind::Uses {
                call: format!(
                    "{}, which only an item-level macro can define ({macros}, not analysed)",
                    segs.join("::")
                ),
                effect: Effect::Unanalysable,
                literal: None,
            },
            span,
            len,
        ));
    }

    /// What a call to `nodes` returns, as a receiver.
    fn returned(&self, nodes: &[NodeId]) -> Recv {
        let mut found: Option<Recv> = None;
        for n in nodes {
            let node = &self.program.nodes[*n];
            let NodeKind::Fn {
                ret,
                self_ty,
                generics,
                ..
            } = &node.kind
            else {
                return Recv::Unknown;
            };
            let Some(ret) = ret else { return Recv::Unknown };
            let recv = self.recv_of_syn_type(ret, node.module, self_ty.as_deref(), generics);
            match (&found, &recv) {
                (_, Recv::Unknown) => return Recv::Unknown,
                (None, _) => found = Some(recv),
                (Some(Recv::Internal(u1, t1)), Recv::Internal(u2, t2)) if u1 == u2 && t1 == t2 => {}
                (Some(Recv::External), Recv::External) => {}
                _ => return Recv::Unknown,
            }
        }
        found.unwrap_or(Recv::Unknown)
    }

    /// A value of type `ty` as written in `module`, looking through references, `Result`,
    /// `Option`, `Box`, `Arc` and `Rc` to the type that carries the methods.
    fn recv_of_syn_type(
        &self,
        ty: &syn::Type,
        module: ModId,
        self_ty: Option<&str>,
        generics: &[(String, Vec<String>)],
    ) -> Recv {
        let traits = super::program::traits_of(ty, generics);
        if !traits.is_empty() {
            return Recv::Dyn(traits);
        }
        match ty {
            syn::Type::Reference(r) => self.recv_of_syn_type(&r.elem, module, self_ty, generics),
            syn::Type::Paren(p) => self.recv_of_syn_type(&p.elem, module, self_ty, generics),
            syn::Type::Path(p) if p.qself.is_none() => {
                let Some(last) = p.path.segments.last() else {
                    return Recv::Unknown;
                };
                if p.path.is_ident("Self") {
                    return match self_ty {
                        Some(t) => Recv::Internal(self.program.modules[module].unit, t.to_string()),
                        None => Recv::Unknown,
                    };
                }
                let wrapper = ["Result", "Option", "Box", "Arc", "Rc", "Cow"]
                    .contains(&last.ident.to_string().as_str());
                if wrapper {
                    if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                        if let Some(syn::GenericArgument::Type(inner)) = a.args.first() {
                            return self.recv_of_syn_type(inner, module, self_ty, generics);
                        }
                    }
                }
                let segs = segment_names(&p.path);
                match self
                    .program
                    .resolve(module, &segs, p.path.leading_colon.is_some())
                {
                    Target::Type(unit, t) => Recv::Internal(unit, t),
                    Target::External(_) => Recv::External,
                    _ => Recv::Unknown,
                }
            }
            _ => Recv::Unknown,
        }
    }

    /// The catalogued methods of the type a call to `nodes` returns (`-> PathBuf`,
    /// `-> reqwest::Client`).
    fn returned_methods(&self, nodes: &[NodeId]) -> Option<&'static TypeMethods> {
        let mut found = None;
        for n in nodes {
            let node = &self.program.nodes[*n];
            let NodeKind::Fn { ret: Some(ret), .. } = &node.kind else {
                return None;
            };
            let methods = self.external_methods(ret, node.module)?;
            if found.is_some_and(|f: &TypeMethods| f.type_path != methods.type_path) {
                return None;
            }
            found = Some(methods);
        }
        found
    }

    /// The catalogued methods of the external type `ty` written in `module`, through
    /// references, `Result` and `Option`.
    fn external_methods(&self, ty: &syn::Type, module: ModId) -> Option<&'static TypeMethods> {
        match ty {
            syn::Type::Reference(r) => self.external_methods(&r.elem, module),
            syn::Type::Path(p) if p.qself.is_none() => {
                let last = p.path.segments.last()?;
                if ["Result", "Option"].contains(&last.ident.to_string().as_str()) {
                    if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                        if let Some(syn::GenericArgument::Type(inner)) = a.args.first() {
                            return self.external_methods(inner, module);
                        }
                    }
                }
                let segs = segment_names(&p.path);
                match self
                    .program
                    .resolve(module, &segs, p.path.leading_colon.is_some())
                {
                    Target::External(path) => type_methods(&path),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The catalogued methods a value of our type reaches through `Deref` (a newtype over
    /// `PathBuf`, or over such a newtype).
    fn deref_methods(&self, recv: Recv) -> Option<&'static TypeMethods> {
        let Recv::Internal(mut unit, mut ty) = recv else {
            return None;
        };
        for _ in 0..MAX_DEREF_STEPS {
            let (module, target) = self.program.derefs.get(&(unit, ty.clone()))?;
            let segs = segment_names(target);
            match self
                .program
                .resolve(*module, &segs, target.leading_colon.is_some())
            {
                Target::External(path) => return type_methods(&path),
                Target::Type(u, t) => {
                    unit = u;
                    ty = t;
                }
                _ => return None,
            }
        }
        None
    }

    fn path_target(&self, path: &syn::Path) -> Target {
        let segs = segment_names(path);
        self.resolve(&segs, path.leading_colon.is_some())
    }

    fn record(&mut self, target: Target, span: Span, len: usize) {
        match target {
            Target::Nodes(nodes) => self.sites.push(site(SiteKind::Calls(nodes), span, len)),
            Target::External(path) => {
                if let Some(effect) = classify_path(&path) {
                    self.sites.push(site(
                        SiteKind::Uses {
                            call: path,
                            effect,
                            literal: None,
                        },
                        span,
                        len,
                    ));
                }
            }
            Target::Foreign(name) => self.sites.push(site(
                SiteKind::Uses {
                    call: format!("{name} (extern fn)"),
                    effect: Effect::Unanalysable,
                    literal: None,
                },
                span,
                len,
            )),
            // A value of our type is built (`Lock(p)`, a unit struct): its `drop` runs.
            Target::Type(unit, ty) => self.drop_edge(unit, &ty, span),
            Target::Module(_) | Target::Unknown => {}
        }
    }

    fn type_of(&self, expr: &syn::Expr) -> Option<&'static TypeMethods> {
        // Down the receivers to the value the chain starts from, then back up through the
        // methods: a loop, since a chain can be thousands of calls long and each level of it
        // asks again.
        let mut methods = Vec::new();
        let mut current = expr;
        loop {
            match current {
                syn::Expr::MethodCall(m) => {
                    methods.push(&m.method);
                    current = &m.receiver;
                }
                syn::Expr::Paren(p) => current = &p.expr,
                syn::Expr::Try(t) => current = &t.expr,
                syn::Expr::Reference(r) => current = &r.expr,
                _ => break,
            }
        }
        let chained = self.type_of_value(current).filter(|base| {
            methods
                .iter()
                .rev()
                .all(|m| base.chains_through(&m.to_string()))
        });
        // Else a value of our own type that derefs to a catalogued one.
        chained.or_else(|| self.deref_methods(self.receiver(expr)))
    }

    fn type_of_value(&self, expr: &syn::Expr) -> Option<&'static TypeMethods> {
        match expr {
            syn::Expr::Call(c) => match c.func.as_ref() {
                syn::Expr::Path(p) if p.qself.is_none() => match self.path_target(&p.path) {
                    Target::External(path) => type_yielded_by(&path),
                    Target::Nodes(nodes) => self.returned_methods(&nodes),
                    _ => None,
                },
                _ => None,
            },
            syn::Expr::Path(p) => self.typed.get(&p.path.get_ident()?.to_string()).copied(),
            syn::Expr::Field(f) => match self.field_type(f)? {
                (_, Target::External(path)) => {
                    type_methods(&path.replace("std::path::PathBuf", "std::path::Path"))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// The type of `base.field` when `base` is a value of one of our structs.
    fn field_type(&self, f: &syn::ExprField) -> Option<(ModId, Target)> {
        let Recv::Internal(unit, ty) = self.receiver(&f.base) else {
            return None;
        };
        let syn::Member::Named(name) = &f.member else {
            return None;
        };
        let (module, path) = self
            .program
            .fields
            .get(&(unit, ty))?
            .get(&name.to_string())?;
        let segs = segment_names(path);
        Some((
            *module,
            self.program
                .resolve(*module, &segs, path.leading_colon.is_some()),
        ))
    }

    /// The traits a field of one of our structs is reached through (`Box<dyn T>`, `S: T`).
    fn field_traits(&self, f: &syn::ExprField) -> Option<Vec<String>> {
        let Recv::Internal(unit, ty) = self.receiver(&f.base) else {
            return None;
        };
        let syn::Member::Named(name) = &f.member else {
            return None;
        };
        self.program
            .trait_fields
            .get(&(unit, ty))?
            .get(&name.to_string())
            .cloned()
    }

    /// What the receiver of a method call is, as far as the body says.
    fn receiver(&self, expr: &syn::Expr) -> Recv {
        match expr {
            syn::Expr::Path(p) if p.qself.is_none() => match p.path.get_ident() {
                Some(id) if id == "self" => match &self.self_ty {
                    Some(ty) => Recv::Internal(self.program.modules[self.module].unit, ty.clone()),
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
                syn::Expr::Path(p) if p.qself.is_none() => match self.path_target(&p.path) {
                    Target::Type(unit, ty) => Recv::Internal(unit, ty),
                    // What the function is declared to return.
                    Target::Nodes(nodes) => self.returned(&nodes),
                    _ => Recv::Unknown,
                },
                _ => Recv::Unknown,
            },
            syn::Expr::MethodCall(m) => {
                let method = m.method.to_string();
                let inner = self.receiver(&m.receiver);
                if ["unwrap", "expect", "clone", "to_owned"].contains(&method.as_str()) {
                    return inner;
                }
                match inner {
                    Recv::Internal(unit, ty) => {
                        match self
                            .program
                            .assoc
                            .get(&(unit, ty))
                            .and_then(|a| a.get(&method))
                        {
                            Some(nodes) => self.returned(nodes),
                            None => Recv::Unknown,
                        }
                    }
                    _ => Recv::Unknown,
                }
            }
            syn::Expr::Try(t) => self.receiver(&t.expr),
            syn::Expr::Lit(_) => Recv::External,
            syn::Expr::Field(f) if self.field_traits(f).is_some() => {
                Recv::Dyn(self.field_traits(f).unwrap_or_default())
            }
            syn::Expr::Field(f) => match self.field_type(f) {
                Some((_, Target::Type(unit, ty))) => Recv::Internal(unit, ty),
                Some((_, Target::External(_))) => Recv::External,
                _ => Recv::Unknown,
            },
            syn::Expr::Paren(p) => self.receiver(&p.expr),
            syn::Expr::Reference(r) => self.receiver(&r.expr),
            _ => Recv::Unknown,
        }
    }

    /// A value whose type is written as `path`: ours, or someone else's (std, a registry crate,
    /// a generic parameter).
    fn recv_of_type(&self, path: &syn::Path) -> Recv {
        if path.is_ident("Self") {
            return match &self.self_ty {
                Some(ty) => Recv::Internal(self.program.modules[self.module].unit, ty.clone()),
                None => Recv::Unknown,
            };
        }
        match self.path_target(path) {
            Target::Type(unit, ty) => Recv::Internal(unit, ty),
            Target::External(_) => Recv::External,
            _ => Recv::Unknown,
        }
    }

    /// The edge of a method call whose receiver is not a catalogued type: to the method of
    /// the receiver's own type when the body says which type that is; to every method of that
    /// name in the analysed code when it does not (a call the analysis cannot place is
    /// assumed to reach each candidate), except for names that are far more likely std trait
    /// methods on std values; to nothing when the receiver is a value of another crate.
    fn method_edge(&mut self, receiver: Recv, name: &str, span: Span) {
        let nodes = match receiver {
            Recv::External => return,
            Recv::Dyn(traits) => {
                let nodes = self.trait_methods(&traits, name);
                let ours = traits.iter().any(|t| self.program.traits.contains(t));
                if !nodes.is_empty() {
                    Some(nodes)
                } else if ours && !COMMON_STD_METHODS.contains(&name) {
                    // A method of one of our traits' supertraits (or an impl the lint did not
                    // place): any method of that name may be it.
                    self.program.methods.get(name).cloned()
                } else {
                    // Only traits from elsewhere, none implemented here: whatever runs is an
                    // impl from elsewhere too.
                    None
                }
            }
            Recv::Internal(unit, ty) => {
                match self.internal_method(unit, ty, name) {
                    Some(nodes) => Some(nodes),
                    // Not an inherent method: a trait method, found by name.
                    None => self.program.methods.get(name).cloned(),
                }
            }
            Recv::Unknown if COMMON_STD_METHODS.contains(&name) => return,
            Recv::Unknown => self.program.methods.get(name).cloned(),
        };
        if let Some(nodes) = nodes {
            self.sites
                .push(site(SiteKind::Calls(nodes), span, name.len()));
        }
    }

    /// The method `name` of our type `ty`, or of the type it derefs to.
    fn internal_method(&self, mut unit: usize, mut ty: String, name: &str) -> Option<Vec<NodeId>> {
        for _ in 0..MAX_DEREF_STEPS {
            if let Some(nodes) = self
                .program
                .assoc
                .get(&(unit, ty.clone()))
                .and_then(|a| a.get(name))
            {
                return Some(nodes.clone());
            }
            let (module, target) = self.program.derefs.get(&(unit, ty.clone()))?;
            let segs = segment_names(target);
            match self
                .program
                .resolve(*module, &segs, target.leading_colon.is_some())
            {
                Target::Type(u, t) => {
                    unit = u;
                    ty = t;
                }
                _ => return None,
            }
        }
        None
    }

    fn macro_call(&mut self, path: &syn::Path, tokens: TokenStream) {
        let Some(last) = path.segments.last() else {
            return;
        };
        let name = last.ident.to_string();
        if self.macro_use(&name, last.ident.span(), name.len()) != MacroKind::Code {
            return;
        }
        if self.macro_depth >= MAX_PARSED_MACRO_DEPTH {
            self.scan(tokens);
            return;
        }
        self.macro_depth += 1;
        self.macro_arguments(tokens);
        self.macro_depth -= 1;
    }

    /// The arguments of a macro invocation, as code of this body whatever the macro does with
    /// them: expressions, else statements, else a token scan.
    fn macro_arguments(&mut self, tokens: TokenStream) {
        let parsed = syn::parse::Parser::parse2(Args::parse_terminated, tokens.clone());
        match parsed {
            Ok(args) => {
                for arg in &args {
                    self.visit_expr(arg);
                }
            }
            Err(_) => match syn::parse::Parser::parse2(syn::Block::parse_within, tokens.clone()) {
                Ok(stmts) => {
                    for s in &stmts {
                        self.visit_stmt(s);
                    }
                }
                Err(_) => self.scan(tokens),
            },
        }
    }

    /// Records a macro invocation by name: an unanalysable one as a use, a compile-time one as
    /// nothing, any other as an edge to its body.
    fn macro_use(&mut self, name: &str, span: Span, len: usize) -> MacroKind {
        if is_unanalysable_macro(name) {
            self.sites.push(site(
                SiteKind::Uses {
                    call: format!("{name}!"),
                    effect: Effect::Unanalysable,
                    literal: None,
                },
                span,
                len,
            ));
            MacroKind::Unanalysable
        } else if COMPILE_TIME_MACROS.contains(&name) {
            MacroKind::CompileTime
        } else {
            self.macro_edge(name, span);
            MacroKind::Code
        }
    }

    fn macro_edge(&mut self, name: &str, span: Span) {
        if let Some(nodes) = self.program.macros.get(name) {
            let nodes = nodes.clone();
            self.sites
                .push(site(SiteKind::Calls(nodes), span, name.len() + 1));
        }
    }

    /// Conservative scan of tokens that do not parse as code (a `macro_rules!` transcriber, a
    /// macro's own syntax): every `a::b(...)` path, `a::b` path, `.m(...)` call and `m!(...)`
    /// invocation is taken as a use.
    fn scan(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tts.len() {
            match &tts[i] {
                TokenTree::Group(g) => {
                    self.scan(g.stream());
                    i += 1;
                }
                TokenTree::Punct(p) if p.as_char() == '$' => {
                    // `$crate` is the defining crate; `$name` is a metavariable.
                    match tts.get(i + 1) {
                        Some(TokenTree::Ident(id)) if id == "crate" => {
                            i = self.scan_path(&tts, i + 1, false);
                        }
                        Some(TokenTree::Group(g)) => {
                            self.scan(g.stream());
                            i += 2;
                        }
                        _ => i += 2,
                    }
                }
                TokenTree::Punct(p) if p.as_char() == '.' => match (tts.get(i + 1), tts.get(i + 2))
                {
                    (Some(TokenTree::Ident(m)), Some(TokenTree::Group(g)))
                        if g.delimiter() == Delimiter::Parenthesis =>
                    {
                        let name = m.to_string();
                        if let Some(effect) = distinctive_method(&name) {
                            self.sites.push(site(
                                SiteKind::Uses {
                                    call: name.clone(),
                                    effect,
                                    literal: None,
                                },
                                m.span(),
                                name.len(),
                            ));
                        }
                        self.method_edge(Recv::Unknown, &name, m.span());
                        i += 2;
                    }
                    _ => i += 1,
                },
                TokenTree::Punct(p) if p.as_char() == ':' => {
                    let absolute = matches!(tts.get(i + 1), Some(TokenTree::Punct(q)) if q.as_char() == ':')
                        && matches!(tts.get(i + 2), Some(TokenTree::Ident(_)))
                        && !matches!(
                            i.checked_sub(1).and_then(|j| tts.get(j)),
                            Some(TokenTree::Ident(_))
                        );
                    if absolute {
                        i = self.scan_path(&tts, i + 2, true);
                    } else {
                        i += 1;
                    }
                }
                TokenTree::Ident(_) => i = self.scan_path(&tts, i, false),
                _ => i += 1,
            }
        }
    }

    /// Reads `ident (:: ident)*` from `start`, records it, and returns the index after it.
    fn scan_path(&mut self, tts: &[TokenTree], start: usize, absolute: bool) -> usize {
        let mut segs = Vec::new();
        let mut i = start;
        let span = tts[start].span();
        while let Some(TokenTree::Ident(id)) = tts.get(i) {
            segs.push(id.to_string());
            i += 1;
            let colons = matches!(tts.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':')
                && matches!(tts.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
            if colons && matches!(tts.get(i + 2), Some(TokenTree::Ident(_))) {
                i += 2;
            } else {
                break;
            }
        }
        let len = segs
            .iter()
            .map(|s| s.len() + 2)
            .sum::<usize>()
            .saturating_sub(2);
        match tts.get(i) {
            Some(TokenTree::Punct(p)) if p.as_char() == '!' => {
                let name = segs.last().cloned().unwrap_or_default();
                return match self.macro_use(&name, span, len) {
                    // `env!(...)` and friends: their arguments are compile-time text.
                    MacroKind::CompileTime => i + 2,
                    MacroKind::Unanalysable | MacroKind::Code => i + 1,
                };
            }
            _ => {}
        }
        let is_call = matches!(tts.get(i), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
        if !is_call && segs.len() < 2 {
            return i;
        }
        let target = self.resolve(&segs, absolute);
        self.record(target, span, len);
        i
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = call.func.as_ref() {
            if p.path.segments.len() == 1 && p.qself.is_none() {
                let target = self.path_target(&p.path);
                let span = p.path.segments[0].ident.span();
                self.hidden_call(&target, p, span, p.path.segments[0].ident.to_string().len());
            }
        }
        syn::visit::visit_expr_call(self, call);
        // The callee was just recorded by `visit_expr_path`; attach a literal first argument.
        if let syn::Expr::Path(p) = call.func.as_ref() {
            let literal = first_literal(&call.args);
            let start = p.path.segments.first().map(|s| s.ident.span().start());
            if let (Some(literal), Some(start)) = (literal, start) {
                if let Some(site) = self
                    .sites
                    .iter_mut()
                    .rev()
                    .find(|s| s.line == start.line && s.column == start.column + 1)
                {
                    if let SiteKind::Uses { literal: l, .. } = &mut site.kind {
                        *l = Some(literal);
                    }
                }
            }
        }
    }

    fn visit_expr_path(&mut self, expr: &'ast syn::ExprPath) {
        let len = expr
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string().len() + 2)
            .sum::<usize>()
            .saturating_sub(2);
        let span = expr
            .path
            .segments
            .first()
            .map_or_else(Span::call_site, |s| s.ident.span());
        let target = match &expr.qself {
            Some(q) if q.position == 0 => match q.ty.as_ref() {
                syn::Type::Path(tp) => match self.path_target(&tp.path) {
                    Target::External(base) => {
                        let rest = segment_names(&expr.path);
                        Target::External(format!("{base}::{}", rest.join("::")))
                    }
                    _ => Target::Unknown,
                },
                _ => Target::Unknown,
            },
            _ => self.path_target(&expr.path),
        };
        // A bare name is judged where it is called (`visit_expr_call`): as a value it is far
        // more often a variable than an item.
        if expr.path.segments.len() > 1 {
            self.hidden_call(&target, expr, span, len);
        }
        self.record(target, span, len);
        syn::visit::visit_expr_path(self, expr);
    }

    fn visit_expr_struct(&mut self, expr: &'ast syn::ExprStruct) {
        if let Recv::Internal(unit, ty) = self.recv_of_type(&expr.path) {
            let span = expr
                .path
                .segments
                .first()
                .map_or_else(Span::call_site, |s| s.ident.span());
            self.drop_edge(unit, &ty, span);
        }
        syn::visit::visit_expr_struct(self, expr);
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        // `for x in e` calls `into_iter` and then `next` of what `e` is.
        let recv = self.receiver(&f.expr);
        self.implicit_edge(&recv, &["into_iter", "next"], f.for_token.span);
        syn::visit::visit_expr_for_loop(self, f);
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        // `let c: Cfg = x.into()` runs `From for Cfg`; `try_into` runs `TryFrom`.
        if let (syn::Pat::Type(t), Some(init)) = (&local.pat, &local.init) {
            let mut value = init.expr.as_ref();
            if let syn::Expr::Try(t) = value {
                value = &t.expr;
            }
            if let syn::Expr::MethodCall(m) = value {
                let conversion = match m.method.to_string().as_str() {
                    "into" => Some("from"),
                    "try_into" => Some("try_from"),
                    _ => None,
                };
                if let Some(conversion) = conversion {
                    let recv = self.recv_of_syn_type(
                        &t.ty,
                        self.module,
                        self.self_ty.as_deref(),
                        &self.generics,
                    );
                    self.implicit_edge(&recv, &[conversion], m.method.span());
                }
            }
        }
        syn::visit::visit_local(self, local);
    }

    fn visit_expr_try(&mut self, e: &'ast syn::ExprTry) {
        // `?` converts the error with `From` into the function's declared error type.
        if let Some(error) = self.ret.and_then(result_error) {
            let recv =
                self.recv_of_syn_type(error, self.module, self.self_ty.as_deref(), &self.generics);
            self.implicit_edge(&recv, &["from"], e.question_token.span);
        }
        syn::visit::visit_expr_try(self, e);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let method = call.method.to_string();
        let span = call.method.span();
        if let Some(effect) = distinctive_method(&method) {
            self.sites.push(site(
                SiteKind::Uses {
                    call: method.clone(),
                    effect,
                    literal: None,
                },
                span,
                method.len(),
            ));
        } else if let Some(ty) = self.type_of(&call.receiver) {
            if let Some(effect) = ty.effect_of(&method, is_literal_false(&call.args)) {
                let write_in_chain = matches!(
                    effect,
                    Effect::Uses(Capability::FsRead | Capability::FsWrite)
                ) && chain_has_write(&call.receiver, &|e| self.type_of(e));
                if !write_in_chain {
                    self.sites.push(site(
                        SiteKind::Uses {
                            call: format!("{}::{method}", ty.type_path),
                            effect,
                            literal: None,
                        },
                        span,
                        method.len(),
                    ));
                }
            }
        } else {
            let receiver = self.receiver(&call.receiver);
            self.method_edge(receiver, &method, span);
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.macro_call(&mac.path, mac.tokens.clone());
    }
}

/// First pass over a body: its `use` declarations, local bindings and typed `let`s.
struct Collector<'a, 'p> {
    w: &'a mut Walker<'p>,
}

impl Collector<'_, '_> {
    fn use_tree(&mut self, prefix: &[String], absolute: bool, tree: &syn::UseTree) {
        let module = self.w.module;
        match tree {
            syn::UseTree::Path(p) => {
                let mut next = prefix.to_vec();
                next.push(p.ident.to_string());
                self.use_tree(&next, absolute, &p.tree);
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.to_vec();
                let name = if n.ident == "self" {
                    prefix.last().cloned().unwrap_or_default()
                } else {
                    full.push(n.ident.to_string());
                    n.ident.to_string()
                };
                self.w.uses.insert(
                    name,
                    UsePath {
                        segs: full,
                        absolute,
                        from: module,
                    },
                );
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.to_vec();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.w.uses.insert(
                    r.rename.to_string(),
                    UsePath {
                        segs: full,
                        absolute,
                        from: module,
                    },
                );
            }
            // A glob inside a body: resolved through the module's globs would need a scope of
            // its own; the catalogued external globs (`use std::fs::*`) are the case that
            // matters, and the walker resolves bare names against them below.
            syn::UseTree::Glob(_) => {
                let base = self.w.program.resolve(module, prefix, absolute);
                if let Target::External(base) = base {
                    // Recorded as pseudo-aliases for every catalogued name under `base`.
                    for entry in policy_runtime::capability::CATALOG {
                        if let Some(rest) = entry.path.strip_prefix(&format!("{base}::")) {
                            if !rest.contains("::") {
                                let mut full: Vec<String> =
                                    base.split("::").map(str::to_string).collect();
                                full.push(rest.to_string());
                                self.w.uses.entry(rest.to_string()).or_insert(UsePath {
                                    segs: full,
                                    absolute: true,
                                    from: module,
                                });
                            }
                        }
                    }
                }
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, absolute, t);
                }
            }
        }
    }

    fn bind(&mut self, pat: &syn::Pat) {
        bind_names(pat, &mut self.w.locals);
    }
}

impl<'ast> Visit<'ast> for Collector<'_, '_> {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&[], u.leading_colon.is_some(), &u.tree);
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        self.bind(&local.pat);
        let pat = strip_type(&local.pat);
        if let syn::Pat::Type(t) = &local.pat {
            if let (syn::Pat::Ident(id), syn::Type::Path(tp)) = (t.pat.as_ref(), t.ty.as_ref()) {
                let recv = self.w.recv_of_type(&tp.path);
                self.w.receivers.insert(id.ident.to_string(), recv);
            }
            if let syn::Pat::Ident(id) = t.pat.as_ref() {
                let traits = super::program::traits_of(&t.ty, &self.w.generics);
                if !traits.is_empty() {
                    self.w
                        .receivers
                        .insert(id.ident.to_string(), Recv::Dyn(traits));
                }
            }
        }
        if let (syn::Pat::Ident(id), Some(init)) = (pat, &local.init) {
            if let Some(ty) = self.w.type_of(&init.expr) {
                self.w.typed.insert(id.ident.to_string(), ty);
            }
            let recv = self.w.receiver(&init.expr);
            if !matches!(recv, Recv::Unknown) {
                self.w.receivers.insert(id.ident.to_string(), recv);
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

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.w.locals.insert(f.sig.ident.to_string());
        syn::visit::visit_item_fn(self, f);
    }
}
