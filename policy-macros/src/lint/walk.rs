//! The walk over a tool body: every path, method call and macro that the catalog classifies.

use policy_analysis::lint::capability::{
    classify_path, distinctive_method, is_unanalysable_macro, Capability, Effect,
    COMPILE_TIME_MACROS,
};
use policy_analysis::lint::syntax::{
    chain_has_write, first_literal, is_literal_false, segment_names, Args,
};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::visit::Visit;

use super::scope::Scope;

/// One catalogued use: where (the tokens of the call's path, so that the error underlines all
/// of it on stable), what was called (fully qualified), and its effect.
pub(crate) struct Use {
    /// The first argument, when it is a string literal (judged against the declared globs,
    /// programs, variables or hosts).
    pub(crate) literal: Option<String>,
    pub(crate) tokens: TokenStream,
    pub(crate) call: String,
    pub(crate) effect: Effect,
}

/// How deep the walk goes into nested expressions, types, patterns and statements. The
/// attribute runs on the compiler's stack; past this depth the body is reported as
/// unanalysable (fail closed) instead of walked further.
pub(crate) const MAX_DEPTH: usize = 256;

/// How many macro invocations deep the arguments are parsed as code. Each parse buffers every
/// token inside the invocation, so parsing every level of `m!(m!(m!(...)))` is quadratic;
/// deeper arguments are left to `toolpolicy-lint`, which scans them token by token.
pub(crate) const MAX_PARSED_MACRO_DEPTH: usize = 32;

pub(crate) fn uses(block: &syn::Block) -> Vec<Use> {
    let scope = Scope::of(block);
    let mut walker = Walker {
        scope: &scope,
        found: Vec::new(),
        depth: 0,
        too_deep: false,
        macro_depth: 0,
        root: block.brace_token.span.open(),
    };
    walker.visit_block(block);
    walker.found
}

struct Walker<'a> {
    scope: &'a Scope,
    found: Vec<Use>,
    /// Nesting of the node being visited.
    depth: usize,
    /// Whether the body was already reported as too deep.
    too_deep: bool,
    /// Macro invocations whose arguments are being walked around the current point.
    macro_depth: usize,
    /// Where to report a body too deep to walk.
    root: Span,
}

impl Walker<'_> {
    /// Enters one level; `false` (and one report) past [`MAX_DEPTH`].
    fn enter(&mut self) -> bool {
        self.depth += 1;
        if self.depth <= MAX_DEPTH {
            return true;
        }
        if !self.too_deep {
            self.too_deep = true;
            self.push(
                self.root,
                format!("code nested more than {MAX_DEPTH} levels deep"),
                Effect::Unanalysable,
            );
        }
        false
    }

    fn push(&mut self, span: Span, call: String, effect: Effect) {
        let tokens = syn::Ident::new("call", span).into_token_stream();
        self.push_tokens(tokens, call, effect);
    }

    fn push_tokens(&mut self, tokens: TokenStream, call: String, effect: Effect) {
        self.found.push(Use {
            literal: None,
            tokens,
            call,
            effect,
        });
    }

    fn path_use(&mut self, expr: &syn::ExprPath) -> Option<(String, Effect)> {
        let full = match &expr.qself {
            // `<T>::f` and `<T as Trait>::f`: the trait path, or the type's own path.
            Some(q) if q.position == 0 => match q.ty.as_ref() {
                syn::Type::Path(tp) if tp.qself.is_none() => {
                    let base = self.scope.resolve(&tp.path)?;
                    let rest = segment_names(&expr.path);
                    format!("{base}::{}", rest.join("::"))
                }
                _ => return None,
            },
            _ => match self.scope.resolve(&expr.path) {
                Some(full) => full,
                None => {
                    let ident = expr.path.get_ident()?.to_string();
                    if self.scope.foreign_fns.contains(&ident) && !self.scope.is_local(&ident) {
                        return Some((ident, Effect::Unanalysable));
                    }
                    return None;
                }
            },
        };
        classify_path(&full).map(|e| (full, e))
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

impl<'ast> Visit<'ast> for Walker<'_> {
    guarded!(visit_expr, syn::Expr);
    guarded!(visit_type, syn::Type);
    guarded!(visit_pat, syn::Pat);
    guarded!(visit_stmt, syn::Stmt);
    guarded!(visit_item, syn::Item);

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = call.func.as_ref() {
            if let Some((name, effect)) = self.path_use(p) {
                self.push_tokens(p.to_token_stream(), name, effect);
                if let Some(last) = self.found.last_mut() {
                    last.literal = first_literal(&call.args);
                }
                for arg in &call.args {
                    self.visit_expr(arg);
                }
                return;
            }
        }
        syn::visit::visit_expr_call(self, call);
    }

    fn visit_expr_path(&mut self, expr: &'ast syn::ExprPath) {
        if let Some((call, effect)) = self.path_use(expr) {
            self.push_tokens(expr.to_token_stream(), call, effect);
        }
        syn::visit::visit_expr_path(self, expr);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let method = call.method.to_string();
        if let Some(effect) = distinctive_method(&method) {
            self.push(call.method.span(), method.clone(), effect);
        } else if let Some(ty) = self.scope.type_of(&call.receiver) {
            if let Some(effect) = ty.effect_of(&method, is_literal_false(&call.args)) {
                // `.create(true).write(true).open(p)` is one write: the innermost armed method.
                let write_in_chain =
                    matches!(
                        effect,
                        Effect::Uses(Capability::FsRead | Capability::FsWrite)
                    ) && chain_has_write(&call.receiver, &|e| self.scope.type_of(e));
                if !write_in_chain {
                    self.push(
                        call.method.span(),
                        format!("{}::{method}", ty.type_path),
                        effect,
                    );
                }
            }
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let Some(name) = mac.path.segments.last().map(|s| s.ident.to_string()) else {
            return;
        };
        if is_unanalysable_macro(&name) {
            self.push(
                mac.path.segments.last().unwrap().ident.span(),
                format!("{name}!"),
                Effect::Unanalysable,
            );
            return;
        }
        if COMPILE_TIME_MACROS.contains(&name.as_str()) {
            return;
        }
        // Most macros take expressions (`println!`, `format!`, `vec!`, `assert!`) or
        // statements; walk what parses and leave the rest, which tier 2 scans token by token.
        if self.macro_depth >= MAX_PARSED_MACRO_DEPTH {
            return;
        }
        self.macro_depth += 1;
        self.macro_arguments(mac);
        self.macro_depth -= 1;
    }
}

impl Walker<'_> {
    fn macro_arguments(&mut self, mac: &syn::Macro) {
        if let Ok(args) = mac.parse_body_with(Args::parse_terminated) {
            for arg in &args {
                self.visit_expr(arg);
            }
        } else if let Ok(stmts) = mac.parse_body_with(syn::Block::parse_within) {
            for stmt in &stmts {
                self.visit_stmt(stmt);
            }
        }
    }
}
