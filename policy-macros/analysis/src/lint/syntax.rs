//! Syntax-tree pieces shared by the two capability lints: the build-time one in
//! `#[tool]` (policy-macros) and `toolpolicy-lint` (manifest-verify). They differ in how far they
//! resolve names (the body alone, or the whole workspace), but read calls, literals and
//! bindings the same way, against the one catalog in [`super::capability`].

use std::collections::HashSet;

use syn::punctuated::Punctuated;
use syn::visit::Visit;

use super::capability::{Capability, Effect, TypeMethods};

/// Call arguments, as syn parses them.
pub type Args = Punctuated<syn::Expr, syn::Token![,]>;

/// The names of a path's segments, generic arguments left out: `["std", "fs", "write"]` for
/// `std::fs::write::<&str>`.
///
/// ```
/// use policy_analysis::lint::syntax::segment_names;
///
/// let path: syn::Path = syn::parse_quote!(std::fs::write::<&str>);
/// assert_eq!(segment_names(&path), ["std", "fs", "write"]);
/// ```
pub fn segment_names(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// The first argument as a string, when it is a literal (`"x"`, `&"x"`, `&&"x"`): the path a
/// literal check compares with the declaration.
///
/// ```
/// use policy_analysis::lint::syntax::first_literal;
///
/// let call: syn::ExprCall = syn::parse_quote!(std::fs::write(&"/etc/x", data));
/// assert_eq!(first_literal(&call.args).as_deref(), Some("/etc/x"));
/// let call: syn::ExprCall = syn::parse_quote!(std::fs::write(path, data));
/// assert_eq!(first_literal(&call.args), None);
/// ```
pub fn first_literal(args: &Args) -> Option<String> {
    let mut arg = args.first()?;
    while let syn::Expr::Reference(r) = arg {
        arg = &r.expr;
    }
    match arg {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        _ => None,
    }
}

/// Whether the arguments are exactly the literal `false`: `.write(false)` on an `OpenOptions`
/// does not ask for writing.
///
/// ```
/// use policy_analysis::lint::syntax::is_literal_false;
///
/// let call: syn::ExprMethodCall = syn::parse_quote!(options.write(false));
/// assert!(is_literal_false(&call.args));
/// let call: syn::ExprMethodCall = syn::parse_quote!(options.write(flag));
/// assert!(!is_literal_false(&call.args));
/// ```
pub fn is_literal_false(args: &Args) -> bool {
    args.len() == 1
        && matches!(
            args.first(),
            Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. })) if !b.value
        )
}

/// The pattern under its type ascriptions: `x` for `x: T`.
///
/// ```
/// use policy_analysis::lint::syntax::strip_type;
///
/// let local: syn::Stmt = syn::parse_quote!(let x: std::fs::File = open(););
/// let syn::Stmt::Local(local) = local else { unreachable!() };
/// assert!(matches!(strip_type(&local.pat), syn::Pat::Ident(i) if i.ident == "x"));
/// ```
pub fn strip_type(pat: &syn::Pat) -> &syn::Pat {
    match pat {
        syn::Pat::Type(t) => strip_type(&t.pat),
        other => other,
    }
}

/// Adds every name `pat` binds to `names`: a local of that name shadows any import of it.
///
/// ```
/// use std::collections::HashSet;
/// use policy_analysis::lint::syntax::bind_names;
///
/// let arm: syn::Arm = syn::parse_quote!((a, Some(b)) => ());
/// let mut names = HashSet::new();
/// bind_names(&arm.pat, &mut names);
/// assert_eq!(names, HashSet::from(["a".to_string(), "b".to_string()]));
/// ```
pub fn bind_names(pat: &syn::Pat, names: &mut HashSet<String>) {
    struct Idents<'s>(&'s mut HashSet<String>);
    impl<'ast> Visit<'ast> for Idents<'_> {
        fn visit_pat_ident(&mut self, i: &'ast syn::PatIdent) {
            self.0.insert(i.ident.to_string());
            syn::visit::visit_pat_ident(self, i);
        }
    }
    Idents(names).visit_pat(pat);
}

/// Whether a builder chain asks for writing somewhere along the way:
/// `OpenOptions::new().append(true).open(p)` writes even though `open` alone reads.
/// `type_of` says which catalogued type an expression has, as far as the caller can tell.
///
/// ```
/// use policy_analysis::lint::capability::type_yielded_by;
/// use policy_analysis::lint::syntax::chain_has_write;
///
/// let type_of = |e: &syn::Expr| match e {
///     syn::Expr::Call(_) => type_yielded_by("std::fs::OpenOptions::new"),
///     syn::Expr::MethodCall(_) => type_yielded_by("std::fs::OpenOptions::new"),
///     _ => None,
/// };
/// let open: syn::ExprMethodCall = syn::parse_quote!(OpenOptions::new().append(true).open(p));
/// assert!(chain_has_write(&open.receiver, &type_of));
/// let open: syn::ExprMethodCall = syn::parse_quote!(OpenOptions::new().read(true).open(p));
/// assert!(!chain_has_write(&open.receiver, &type_of));
/// ```
pub fn chain_has_write(
    expr: &syn::Expr,
    type_of: &dyn Fn(&syn::Expr) -> Option<&'static TypeMethods>,
) -> bool {
    match expr {
        syn::Expr::MethodCall(m) => {
            let armed = type_of(&m.receiver).is_some_and(|ty| {
                ty.effect_of(&m.method.to_string(), is_literal_false(&m.args))
                    == Some(Effect::Uses(Capability::FsWrite))
            });
            armed || chain_has_write(&m.receiver, type_of)
        }
        syn::Expr::Paren(p) => chain_has_write(&p.expr, type_of),
        syn::Expr::Reference(r) => chain_has_write(&r.expr, type_of),
        _ => false,
    }
}
