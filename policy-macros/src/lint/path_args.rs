//! A `ReadPath`/`WritePath` parameter handed to `std::fs` (or `tokio::fs`): the call opens the
//! admitted *name* and follows any symlink out of the folder the gate admitted it under, while
//! the parameter's own methods resolve beneath that folder. Such a call is an error whose hint
//! names the method to use.
//!
//! Like the rest of tier 1, only calls whose path the body itself decides are judged
//! (`std::fs::read(&path)`, `fs::read(&path)` after a `use std::fs` inside the body,
//! `std::fs::OpenOptions::new().append(true).open(&path)`), and a parameter rebound inside the
//! body is no longer taken for the argument.

use policy_analysis::lint::names::{BodyOnly, Named};
use policy_analysis::lint::scope::{Params, Scope};
use policy_analysis::lint::walk::Limits;
use quote::ToTokens;
use syn::visit::Visit;

/// Errors for `std::fs`/`tokio::fs` calls in `block` given one of `params` (the names of the
/// function's `ReadPath`/`WritePath` parameters).
pub(crate) fn std_fs_on_path_args(block: &syn::Block, params: &[String]) -> Vec<syn::Error> {
    if params.is_empty() {
        return Vec::new();
    }
    // The parameters are left out of the scope: a name the body binds is a parameter rebound.
    let scope = Scope::of(
        &BodyOnly,
        &Params::default(),
        block,
        Limits::ATTRIBUTE.max_depth,
    );
    let mut finder = Finder {
        scope: &scope,
        params,
        errors: Vec::new(),
    };
    finder.visit_block(block);
    finder.errors
}

struct Finder<'a> {
    scope: &'a Scope<'a, BodyOnly>,
    params: &'a [String],
    errors: Vec<syn::Error>,
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let syn::Expr::Path(func) = call.func.as_ref() {
            let full = match self.scope.resolve(&func.path) {
                Named::External(f)
                    if f.starts_with("std::fs::") || f.starts_with("tokio::fs::") =>
                {
                    Some(f)
                }
                _ => None,
            };
            let param = call.args.iter().find_map(|a| self.param_in(a));
            if let (Some(full), Some(param)) = (full, param) {
                self.errors.push(syn::Error::new_spanned(
                    func.to_token_stream(),
                    message(&full, &param),
                ));
            }
        }
        syn::visit::visit_expr_call(self, call);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        // `OpenOptions::new().write(true).open(&dest)`.
        if call.method == "open" {
            let options = self
                .scope
                .type_of(&call.receiver)
                .map(|t| t.type_path)
                .filter(|t| t.ends_with("fs::OpenOptions"));
            let param = call.args.iter().find_map(|a| self.param_in(a));
            if let (Some(options), Some(param)) = (options, param) {
                self.errors.push(syn::Error::new_spanned(
                    &call.method,
                    message(&format!("{options}::open"), &param),
                ));
            }
        }
        syn::visit::visit_expr_method_call(self, call);
    }
}

impl Finder<'_> {
    /// The parameter `arg` passes as it is: `path`, `&path`, `path.as_path()`, `path.clone()`.
    fn param_in(&self, arg: &syn::Expr) -> Option<String> {
        match arg {
            syn::Expr::Path(p) => {
                let name = p.path.get_ident()?.to_string();
                let name = name.trim_start_matches("r#");
                (self.params.iter().any(|k| k == name) && !self.scope.is_local(name))
                    .then(|| name.to_string())
            }
            syn::Expr::Reference(r) => self.param_in(&r.expr),
            syn::Expr::Paren(p) => self.param_in(&p.expr),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.param_in(&u.expr),
            syn::Expr::MethodCall(m)
                if m.args.is_empty()
                    && [
                        "as_path",
                        "as_ref",
                        "clone",
                        "to_path_buf",
                        "into_path_buf",
                        "to_owned",
                        "as_os_str",
                    ]
                    .contains(&m.method.to_string().as_str()) =>
            {
                self.param_in(&m.receiver)
            }
            _ => None,
        }
    }
}

/// The method of `ReadPath`/`WritePath` that does what `call` does, beneath the folder.
fn safe_method(call: &str) -> Option<&'static str> {
    let name: Vec<&str> = call.split("::").collect();
    Some(match name.as_slice() {
        [.., "fs", "read"] => "read()",
        [.., "fs", "read_to_string"] => "read_to_string()",
        [.., "fs", "read_dir"] => "list()",
        [.., "fs", "write"] => "write(contents)",
        [.., "File", "open"] => "open()",
        [.., "File", "create"] => "create()",
        [.., "File", "create_new"] => "create_new()",
        [.., "fs", "rename"] => "rename_to(&to)",
        [.., "fs", "remove_file"] => "remove_file()",
        [.., "fs", "remove_dir"] => "remove_dir()",
        _ => return None,
    })
}

fn message(call: &str, param: &str) -> String {
    let hint = match safe_method(call) {
        Some(method) => format!("use `{param}.{method}` instead"),
        None => format!(
            "use its methods instead (`{param}.open()`, `.read()`, `.list()`, and for a `WritePath` `.create()`, `.write(..)`, `.rename_to(..)`, `.remove_file()`)"
        ),
    };
    format!(
        "`{call}` opens `{param}` by name and follows symlinks out of the folder the gate admitted it under; {hint}, which resolves it beneath that folder"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lint(body: &str) -> Vec<String> {
        let block: syn::Block = syn::parse_str(&format!("{{ {body} }}")).unwrap();
        std_fs_on_path_args(&block, &["path".to_string(), "dest".to_string()])
            .into_iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn std_fs_given_a_path_parameter_is_flagged_with_the_method_to_use() {
        for (body, hint) in [
            ("std::fs::read_to_string(path)", "path.read_to_string()"),
            ("::std::fs::read(&path)", "path.read()"),
            ("std::fs::write(&dest, b)", "dest.write(contents)"),
            ("std::fs::File::open(path.as_path())", "path.open()"),
            ("std::fs::File::create(&*dest)", "dest.create()"),
            ("use std::fs; fs::read_dir(path.clone())", "path.list()"),
            ("std::fs::rename(&dest, other)", "dest.rename_to(&to)"),
            ("tokio::fs::remove_file(&dest).await", "dest.remove_file()"),
            ("std::fs::copy(&path, other)", "path.open()"),
            (
                "std::fs::OpenOptions::new().append(true).open(&dest)",
                "dest.open()",
            ),
        ] {
            let msgs = lint(body);
            assert_eq!(msgs.len(), 1, "{body}: {msgs:?}");
            assert!(msgs[0].contains(hint), "{body}: {}", msgs[0]);
        }
    }

    #[test]
    fn other_calls_and_rebound_names_pass() {
        for body in [
            "path.read_to_string()",
            "std::fs::read(other)",
            "std::fs::read(path.join(\"x\"))",
            "let path = std::path::PathBuf::from(\"/x\"); std::fs::read(&path)",
            "fs::read(&path)", // a module-level import: not decided from the body
            "my::read(&path)",
            "std::path::Path::new(&*path).exists()",
        ] {
            assert!(lint(body).is_empty(), "{body}: {:?}", lint(body));
        }
    }
}
