//! The policy DSL reader: the text of `#[tool(...)]` and `#[tool_policy(...)]` turned into a
//! [`ToolPolicy`](policy_runtime::ToolPolicy) and the attribute's other checked fields (name,
//! description, path arguments), with every mistake reported as a [`syn::Error`] at the span
//! where it was written.
//!
//! It is the only reader of the language: the attribute macros call it at compile time and
//! `toolpolicy-lint` calls it on the attribute tokens it finds in source, so the two cannot
//! disagree about what an attribute means (`net = none`, a quoted `risk = "low"`, a misplaced
//! key): whatever one accepts the other accepts, with the same policy.
//!
//! - [`ast`]: the syntax tree (`key = value` and `key(...)` entries with their spans).
//! - [`validate`]: the meaning of each entry, every check, errors collected.
//! - [`suggest`]: "did you mean" for misspelt keys.
//!
//! ```
//! use policy_analysis::dsl;
//! use policy_runtime::policy::NetPolicy;
//!
//! let checked = dsl::read(quote::quote!(policy(fs.read = ["/data/**"], net = deny)), "fetch")?;
//! assert_eq!(checked.policy.net, Some(NetPolicy::Deny));
//!
//! let errors = dsl::read(quote::quote!(policy(nett = deny, risk = "low")), "fetch").unwrap_err();
//! assert_eq!(errors.into_iter().count(), 2); // every mistake, each at its own span
//! # Ok::<(), syn::Error>(())
//! ```

pub mod ast;
pub mod suggest;
pub mod validate;

pub use ast::Attr;
pub use validate::{Checked, Widening};

/// Reads the tokens inside `#[tool(...)]` (or `#[tool_policy(...)]`) of the function
/// `tool_name` (the name `only_after` may not repeat when no `name = ".."` overrides it).
/// An error at the end of the tokens points at the call site; [`read_at`] names another place.
///
/// The caller bounds how deeply the tokens nest: syn parses by recursion (the attribute macros
/// measure first; the lint measures whole files before parsing them).
pub fn read(tokens: proc_macro2::TokenStream, tool_name: &str) -> syn::Result<Checked> {
    read_at(tokens, proc_macro2::Span::call_site(), tool_name)
}

/// [`read`], with errors at the end of the tokens pointing at `close` (the attribute's closing
/// parenthesis, when the tokens come from a parsed file).
pub fn read_at(
    tokens: proc_macro2::TokenStream,
    close: proc_macro2::Span,
    tool_name: &str,
) -> syn::Result<Checked> {
    let attr = ast::parse(tokens, close)?;
    validate::validate(&attr, tool_name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn messages(err: syn::Error) -> Vec<String> {
        err.into_iter().map(|e| e.to_string()).collect()
    }

    /// `risk = "low"` has one answer: it is refused, with the unquoted spelling to write
    /// (a risk is a word of the language, like `deny`; a string would read as a name).
    #[test]
    fn quoted_risk_is_refused_with_the_fix() {
        let err = read(quote!(policy(risk = "low")), "t").err().unwrap();
        assert_eq!(messages(err), ["write `risk = low` without quotes"]);
        assert!(read(quote!(policy(risk = low)), "t").is_ok());
    }

    #[test]
    fn every_mistake_is_reported_each_at_its_place() {
        let tokens: proc_macro2::TokenStream =
            "policy(nett = deny,\n fs.read = \"rel\"), limits(timeout_ms = 0)"
                .parse()
                .unwrap();
        let err = read(tokens, "t").err().unwrap();
        let places: Vec<(usize, usize)> = err
            .into_iter()
            .map(|e| (e.span().start().line, e.span().start().column))
            .collect();
        assert_eq!(places, [(1, 7), (2, 11), (2, 39)]);
    }

    #[test]
    fn the_end_of_the_input_points_at_the_closing_parenthesis() {
        let close: proc_macro2::TokenStream = "()".parse().unwrap();
        let Some(proc_macro2::TokenTree::Group(close)) = close.into_iter().next() else {
            unreachable!()
        };
        let err = read_at(quote!(name =), close.span_close(), "t")
            .err()
            .unwrap();
        assert_eq!(err.span().byte_range(), close.span_close().byte_range());
    }
}
