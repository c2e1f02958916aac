//! The one body walker of both tiers: every path, method call and macro of a function body (or
//! a `macro_rules!` transcriber) that the catalog classifies, and every call into the analysed
//! code, as [`Site`]s.
//!
//! It is generic over [`Names`], how names resolve beyond the body, because that is all the
//! tiers see differently: the attribute sees the body ([`BodyOnly`](super::names::BodyOnly)),
//! `toolpolicy-lint` the workspace. Everything else (the body's own `use` declarations and
//! bindings, builder chains, literal arguments, macro arguments, the catalog) is read here
//! once, so a call one tier reports the other reports too, wherever both can name it.
//!
//! Receivers are typed from what the code declares, where the tier's [`Names`] knows the types
//! (tier 2): functions' return types (so a known receiver reaches its own type's method and no
//! other of the same name), trait objects, `impl Trait` and bounded generics (every impl of
//! the trait in the analysed code), and `Deref` newtypes. Calls made without being written are
//! followed too: `drop` of a built value whose type has `impl Drop`, `into_iter`/`next` of a
//! `for` loop, `From`/`TryFrom` behind a let-annotated `into`/`try_into`, and `From` of the
//! declared error type behind `?`.
//!
//! What the tiers can afford differs too, and is a parameter ([`Limits`]): the attribute runs
//! on the compiler's stack and stops at a depth, reporting the rest as unanalysable;
//! `toolpolicy-lint` measures nesting before it parses and walks on a stack of its own.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit::Visit;

use super::capability::{
    classify_path, distinctive_method, is_unanalysable_macro, Capability, Effect,
    COMPILE_TIME_MACROS,
};
use super::names::{Named, Names};
use super::scope::{type_path, Params, Recv, Scope};
use super::syntax::{chain_has_write, first_literal, is_literal_false, segment_names, Args};

/// How far the walker goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// How deep the walk goes into nested expressions, types, patterns, statements and items;
    /// past it the body is reported once as unanalysable (fail closed).
    pub max_depth: usize,
    /// How many macro invocations deep the arguments are parsed as code. Each parse buffers
    /// every token inside the invocation, so parsing `m!(m!(m!(...)))` at every level is
    /// quadratic; deeper arguments are scanned token by token, which reads each token once.
    pub max_parsed_macro_depth: usize,
}

impl Limits {
    /// Tier 1, the `#[tool]` attribute: it runs on the compiler's stack (8 MiB by default),
    /// after a pre-parse check that refuses items nested past 128 delimiters.
    pub const ATTRIBUTE: Limits = Limits {
        max_depth: 256,
        max_parsed_macro_depth: 32,
    };
    /// Tier 2, `toolpolicy-lint`: it refuses files past its nesting estimate before parsing
    /// them and walks on a thread with a large stack, so the walk itself has no depth limit.
    pub const WORKSPACE: Limits = Limits {
        max_depth: usize::MAX,
        max_parsed_macro_depth: 4,
    };
}

/// A catalogued use: what was called (fully qualified), what it does, and its first argument
/// when that is a string literal (judged against the declared globs, programs, variables or
/// hosts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Use {
    /// `std::fs::write`, `std::fs::OpenOptions::append`, `asm!`, an `extern` function's name.
    pub call: String,
    /// What it does.
    pub effect: Effect,
    /// The first argument, when it is a string literal.
    pub literal: Option<String>,
}

/// What a body does at one place.
#[derive(Clone, Debug)]
pub enum SiteKind<N> {
    /// A catalogued call.
    Uses(Use),
    /// A call into the analysed code (tier 2's call graph).
    Calls(Vec<N>),
}

/// One thing a body does, and where.
#[derive(Clone, Debug)]
pub struct Site<N> {
    /// What.
    pub kind: SiteKind<N>,
    /// Where the name starts: the first segment of a path, a method's or macro's name.
    pub span: Span,
    /// The first and last token of the call's path, so that an error underlines all of it
    /// (`::std::fs::write` from the leading `::`).
    pub range: (Span, Span),
    /// The length of the name as written (segments joined by `::`), for highlighting.
    pub len: usize,
}

/// The sites of a function body: `params` are the function's parameters.
pub fn fn_sites<R: Names>(
    names: &R,
    params: &Params,
    block: &syn::Block,
    limits: Limits,
) -> Vec<Site<R::Node>> {
    let scope = Scope::of(names, params, block, limits.max_depth);
    let mut walker = Walker::new(scope, limits, block.brace_token.span.open());
    walker.visit_block(block);
    walker.sites
}

/// The sites of `macro_rules!` transcribers: token streams that do not parse as code, scanned
/// conservatively (every `a::b(...)`, `a::b`, `.m(...)` and `m!(...)` is taken as a use).
pub fn macro_sites<R: Names>(
    names: &R,
    bodies: &[TokenStream],
    limits: Limits,
) -> Vec<Site<R::Node>> {
    let mut walker = Walker::new(Scope::empty(names), limits, Span::call_site());
    for body in bodies {
        walker.scan(body.clone());
    }
    walker.sites
}

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

/// The message of the site reported for a body nested past [`Limits::max_depth`].
pub fn too_deep_call(max_depth: usize) -> String {
    format!("code nested more than {max_depth} levels deep")
}

struct Walker<'n, R: Names> {
    scope: Scope<'n, R>,
    limits: Limits,
    sites: Vec<Site<R::Node>>,
    /// Nesting of the node being visited.
    depth: usize,
    /// Whether the body was already reported as too deep.
    too_deep: bool,
    /// Macro invocations whose arguments are being parsed around the current point.
    macro_depth: usize,
    /// Where to report a body too deep to walk.
    root: Span,
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

/// The spans of the first and last token of `tokens`.
fn token_range(tokens: TokenStream, fallback: Span) -> (Span, Span) {
    let mut iter = tokens.into_iter();
    let first = iter.next().map_or(fallback, |t| t.span());
    let last = iter.last().map_or(first, |t| t.span());
    (first, last)
}

/// The length of a path as written, segments joined by `::`.
fn path_len(segs: &[String]) -> usize {
    segs.iter()
        .map(|s| s.len() + 2)
        .sum::<usize>()
        .saturating_sub(2)
}

impl<'n, R: Names> Walker<'n, R> {
    fn new(scope: Scope<'n, R>, limits: Limits, root: Span) -> Self {
        Walker {
            scope,
            limits,
            sites: Vec::new(),
            depth: 0,
            too_deep: false,
            macro_depth: 0,
            root,
        }
    }

    /// Enters one level; `false` (and one report) past [`Limits::max_depth`].
    fn enter(&mut self) -> bool {
        self.depth += 1;
        if self.depth <= self.limits.max_depth {
            return true;
        }
        if !self.too_deep {
            self.too_deep = true;
            let call = too_deep_call(self.limits.max_depth);
            self.push_use(call, Effect::Unanalysable, None, self.root, 1);
        }
        false
    }

    fn push(&mut self, kind: SiteKind<R::Node>, span: Span, range: (Span, Span), len: usize) {
        self.sites.push(Site {
            kind,
            span,
            range,
            len: len.max(1),
        });
    }

    fn push_use(
        &mut self,
        call: String,
        effect: Effect,
        literal: Option<String>,
        span: Span,
        len: usize,
    ) {
        let kind = SiteKind::Uses(Use {
            call,
            effect,
            literal,
        });
        self.push(kind, span, (span, span), len);
    }

    /// Records what a path names: an edge, a catalogued use, an `extern` function.
    fn record(
        &mut self,
        target: Named<R::Node, R::Type>,
        literal: Option<String>,
        span: Span,
        range: (Span, Span),
        len: usize,
    ) {
        let kind = match target {
            Named::Nodes(nodes) => SiteKind::Calls(nodes),
            Named::External(path) => match classify_path(&path) {
                Some(effect) => SiteKind::Uses(Use {
                    call: path,
                    effect,
                    literal,
                }),
                None => return,
            },
            Named::Foreign(name) => SiteKind::Uses(Use {
                call: name,
                effect: Effect::Unanalysable,
                literal: None,
            }),
            // A value of our type is built (`Lock(p)`, a unit struct): its `drop` runs.
            Named::Type(ty) => {
                self.drop_edge(&ty, span);
                return;
            }
            Named::Unknown => return,
        };
        self.push(kind, span, range, len);
    }

    /// Records a path expression, with the literal first argument when it is called.
    fn path_site(&mut self, expr: &syn::ExprPath, literal: Option<String>) {
        let segs = segment_names(&expr.path);
        let span = expr
            .path
            .segments
            .first()
            .map_or_else(Span::call_site, |s| s.ident.span());
        let target = match &expr.qself {
            // `<T>::f` and `<T as Trait>::f`: the type's own path, or the trait's.
            Some(q) if q.position == 0 => match q.ty.as_ref() {
                syn::Type::Path(tp) if tp.qself.is_none() => match self.scope.resolve(&tp.path) {
                    Named::External(base) => {
                        Named::External(format!("{base}::{}", segs.join("::")))
                    }
                    _ => Named::Unknown,
                },
                _ => Named::Unknown,
            },
            _ => self
                .scope
                .resolve_segments(&segs, expr.path.leading_colon.is_some()),
        };
        let range = token_range(expr.to_token_stream(), span);
        self.record(target, literal, span, range, path_len(&segs));
    }

    /// The edge of a method call whose receiver is not a catalogued type: to the method of
    /// the receiver's own type when the body says which type that is; to every method of that
    /// name in the analysed code when it does not (a call the analysis cannot place is
    /// assumed to reach each candidate), except for names that are far more likely std trait
    /// methods on std values; to nothing when the receiver is a value of another crate.
    fn method_edge(&mut self, receiver: Recv<R::Type>, name: &str, span: Span) {
        let names = self.scope.names;
        let nodes = match receiver {
            Recv::External => return,
            Recv::Dyn(traits) => {
                let nodes = names.trait_methods(&traits, name);
                if !nodes.is_empty() {
                    self.push(SiteKind::Calls(nodes), span, (span, span), name.len());
                    return;
                }
                if traits.iter().any(|t| names.declares_trait(t))
                    && !COMMON_STD_METHODS.contains(&name)
                {
                    // A method of one of our traits' supertraits (or an impl the lint did not
                    // place): any method of that name may be it.
                    names.methods_named(name)
                } else {
                    // Only traits from elsewhere, none implemented here: whatever runs is an
                    // impl from elsewhere too.
                    return;
                }
            }
            // Not an inherent method: a trait method, found by name.
            Recv::Internal(ty) => names
                .associated(&ty, name)
                .or_else(|| names.methods_named(name)),
            Recv::Unknown if COMMON_STD_METHODS.contains(&name) => return,
            Recv::Unknown => names.methods_named(name),
        };
        if let Some(nodes) = nodes {
            let nodes = nodes.to_vec();
            self.push(SiteKind::Calls(nodes), span, (span, span), name.len());
        }
    }

    /// The edge to `drop` of a type with an `impl Drop`, when a value of it is built.
    fn drop_edge(&mut self, ty: &R::Type, span: Span) {
        if let Some(nodes) = self.scope.names.drop_of(ty) {
            let nodes = nodes.to_vec();
            self.push(SiteKind::Calls(nodes), span, (span, span), 1);
        }
    }

    /// Edges to the associated functions `names` of what `recv` is, called without being
    /// written (`for`, `into`, `?`): the type's own, or every impl's through traits.
    fn implicit_edge(&mut self, recv: Recv<R::Type>, called: &[&str], span: Span) {
        let names = self.scope.names;
        let mut nodes = Vec::new();
        for name in called {
            match &recv {
                Recv::Internal(ty) => {
                    nodes.extend(names.associated(ty, name).into_iter().flatten().cloned())
                }
                Recv::Dyn(traits) => nodes.extend(names.trait_methods(traits, name)),
                Recv::External | Recv::Unknown => {}
            }
        }
        if !nodes.is_empty() {
            self.push(SiteKind::Calls(nodes), span, (span, span), 1);
        }
    }

    fn macro_call(&mut self, path: &syn::Path, tokens: TokenStream) {
        let Some(last) = path.segments.last() else {
            return;
        };
        let name = last.ident.to_string();
        if self.macro_use(&name, last.ident.span(), name.len()) != MacroKind::Code {
            return;
        }
        if self.macro_depth >= self.limits.max_parsed_macro_depth {
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
    /// nothing, any other as an edge to its definitions in the analysed code.
    fn macro_use(&mut self, name: &str, span: Span, len: usize) -> MacroKind {
        if is_unanalysable_macro(name) {
            self.push_use(format!("{name}!"), Effect::Unanalysable, None, span, len);
            MacroKind::Unanalysable
        } else if COMPILE_TIME_MACROS.contains(&name) {
            MacroKind::CompileTime
        } else {
            if let Some(nodes) = self.scope.names.macro_named(name) {
                let nodes = nodes.to_vec();
                self.push(SiteKind::Calls(nodes), span, (span, span), name.len() + 1);
            }
            MacroKind::Code
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
                            self.push_use(name.clone(), effect, None, m.span(), name.len());
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
        let mut last = span;
        while let Some(TokenTree::Ident(id)) = tts.get(i) {
            segs.push(id.to_string());
            last = id.span();
            i += 1;
            let colons = matches!(tts.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':')
                && matches!(tts.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
            if colons && matches!(tts.get(i + 2), Some(TokenTree::Ident(_))) {
                i += 2;
            } else {
                break;
            }
        }
        let len = path_len(&segs);
        if let Some(TokenTree::Punct(p)) = tts.get(i) {
            if p.as_char() == '!' {
                let name = segs.last().cloned().unwrap_or_default();
                return match self.macro_use(&name, span, len) {
                    // `env!(...)` and friends: their arguments are compile-time text.
                    MacroKind::CompileTime => i + 2,
                    MacroKind::Unanalysable | MacroKind::Code => i + 1,
                };
            }
        }
        let is_call = matches!(tts.get(i), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
        if !is_call && segs.len() < 2 {
            return i;
        }
        let target = self.scope.resolve_segments(&segs, absolute);
        self.record(target, None, span, (span, last), len);
        i
    }
}

/// Visits `$node` one level deeper, unless that is too deep.
macro_rules! guarded {
    ($name:ident, $ty:ty) => {
        fn $name(&mut self, node: &'ast $ty) {
            if self.enter() {
                syn::visit::$name(self, node);
            }
            self.depth -= 1;
        }
    };
}

impl<'ast, R: Names> Visit<'ast> for Walker<'_, R> {
    guarded!(visit_expr, syn::Expr);
    guarded!(visit_type, syn::Type);
    guarded!(visit_pat, syn::Pat);
    guarded!(visit_stmt, syn::Stmt);
    guarded!(visit_item, syn::Item);

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        let syn::Expr::Path(func) = call.func.as_ref() else {
            syn::visit::visit_expr_call(self, call);
            return;
        };
        self.path_site(func, first_literal(&call.args));
        // The callee is recorded; what remains are its generic arguments and the arguments.
        syn::visit::visit_expr_path(self, func);
        for arg in &call.args {
            self.visit_expr(arg);
        }
    }

    fn visit_expr_path(&mut self, expr: &'ast syn::ExprPath) {
        self.path_site(expr, None);
        syn::visit::visit_expr_path(self, expr);
    }

    fn visit_expr_struct(&mut self, expr: &'ast syn::ExprStruct) {
        if let Recv::Internal(ty) = self.scope.recv_of_type(&expr.path) {
            let span = expr
                .path
                .segments
                .first()
                .map_or(self.root, |s| s.ident.span());
            self.drop_edge(&ty, span);
        }
        syn::visit::visit_expr_struct(self, expr);
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        // `for x in e` calls `into_iter` and then `next` of what `e` is.
        let recv = self.scope.receiver(&f.expr);
        self.implicit_edge(recv, &["into_iter", "next"], f.for_token.span);
        syn::visit::visit_expr_for_loop(self, f);
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        // `let c: Cfg = x.into()` runs `From for Cfg`; `try_into` runs `TryFrom`.
        if let (syn::Pat::Type(t), Some(init)) = (&local.pat, &local.init) {
            let mut value = init.expr.as_ref();
            if let syn::Expr::Try(t) = value {
                value = &t.expr;
            }
            let conversion = match value {
                syn::Expr::MethodCall(m) if m.method == "into" => Some(("from", m.method.span())),
                syn::Expr::MethodCall(m) if m.method == "try_into" => {
                    Some(("try_from", m.method.span()))
                }
                _ => None,
            };
            if let (Some((conversion, span)), Some(path)) = (conversion, type_path(&t.ty)) {
                let recv = self.scope.recv_of_type(path);
                self.implicit_edge(recv, &[conversion], span);
            }
        }
        syn::visit::visit_local(self, local);
    }

    fn visit_expr_try(&mut self, e: &'ast syn::ExprTry) {
        // `?` converts the error with `From` into the function's declared error type.
        let recv = match self.scope.names.error_type() {
            Named::Type(ty) => Recv::Internal(ty),
            _ => Recv::Unknown,
        };
        self.implicit_edge(recv, &["from"], e.question_token.span);
        syn::visit::visit_expr_try(self, e);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let method = call.method.to_string();
        let span = call.method.span();
        if let Some(effect) = distinctive_method(&method) {
            self.push_use(method.clone(), effect, None, span, method.len());
        } else if let Some(ty) = self.scope.type_of(&call.receiver) {
            if let Some(effect) = ty.effect_of(&method, is_literal_false(&call.args)) {
                // `.create(true).write(true).open(p)` is one write: the innermost armed method.
                let write_in_chain =
                    matches!(
                        effect,
                        Effect::Uses(Capability::FsRead | Capability::FsWrite)
                    ) && chain_has_write(&call.receiver, &|e| self.scope.type_of(e));
                if !write_in_chain {
                    let call = format!("{}::{method}", ty.type_path);
                    self.push_use(call, effect, None, span, method.len());
                }
            }
        } else {
            let receiver = self.scope.receiver(&call.receiver);
            self.method_edge(receiver, &method, span);
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.macro_call(&mac.path, mac.tokens.clone());
    }
}
