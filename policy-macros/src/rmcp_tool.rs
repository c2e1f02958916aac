//! rmcp's `#[tool]` below `#[tool_policy]`: the tool's description is handed to it explicitly.
//!
//! rmcp takes a tool's description from the doc comment only while no other attribute follows
//! the doc lines (any later attribute resets what it collected), so a method written
//! `/// doc` `#[tool]` `#[tool_policy(..)]` reaches MCP clients with no description at all.
//! `#[tool_policy]` therefore requires rmcp's `#[tool]` below it, where it can still rewrite it:
//! it adds `description = "<the manifest's description>"` unless one is written. Above it,
//! rmcp has already run and nothing can be repaired, so that order is a compile error.

use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::{Attribute, Meta, Token};

/// Finds rmcp's `#[tool]` among the attributes that follow `#[tool_policy]` and gives it
/// `description` (when it has none and `description` is not empty).
pub fn forward_description(attrs: &mut [Attribute], description: &str) -> syn::Result<()> {
    let Some(attr) = attrs.iter_mut().find(|a| is_rmcp_tool(a)) else {
        return Err(syn::Error::new(
            Span::call_site(),
            "`#[tool_policy(...)]` must stand above rmcp's `#[tool]`, and found none below it: \
             rmcp drops the doc comment when another attribute follows it, so `#[tool_policy]` \
             hands it over as `description`, which it can only do for a `#[tool]` that has not \
             run yet. Write `#[tool_policy(...)]` first, then `#[tool]`",
        ));
    };
    if description.is_empty() {
        return Ok(());
    }
    let path = attr.path().clone();
    let args = match &attr.meta {
        Meta::Path(_) => Punctuated::new(),
        // rmcp reports its own syntax errors; an attribute it cannot parse is left to it.
        Meta::List(_) => {
            match attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
                Ok(args) => args,
                Err(_) => return Ok(()),
            }
        }
        Meta::NameValue(_) => return Ok(()),
    };
    if args.iter().any(|m| m.path().is_ident("description")) {
        return Ok(());
    }
    let args = args.iter();
    *attr = syn::parse_quote!(#[#path(#(#args,)* description = #description)]);
    Ok(())
}

/// rmcp's `#[tool]`, however it is imported (`tool`, `rmcp::tool`, `::rmcp::tool`).
fn is_rmcp_tool(attr: &Attribute) -> bool {
    let path = attr.path();
    path.segments.last().is_some_and(|s| s.ident == "tool")
        && path
            .segments
            .iter()
            .rev()
            .skip(1)
            .all(|s| s.ident == "rmcp")
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn forwarded(item: &str) -> syn::Result<String> {
        let mut func: syn::ItemFn = syn::parse_str(item)?;
        forward_description(&mut func.attrs, "Read a file.")?;
        let attrs = &func.attrs;
        Ok(quote!(#(#attrs)*).to_string())
    }

    #[test]
    fn the_description_is_added_to_every_form_of_the_attribute() {
        assert_eq!(
            forwarded("#[tool] fn f() {}").unwrap(),
            r#"# [tool (description = "Read a file.")]"#
        );
        assert_eq!(
            forwarded(
                r#"#[rmcp::tool(title = "Read", annotations(read_only_hint = true),)] fn f() {}"#
            )
            .unwrap(),
            r#"# [rmcp :: tool (title = "Read" , annotations (read_only_hint = true) , description = "Read a file.")]"#
        );
    }

    #[test]
    fn a_written_description_is_kept() {
        assert_eq!(
            forwarded(r#"#[tool(description = "mine")] fn f() {}"#).unwrap(),
            r#"# [tool (description = "mine")]"#
        );
    }

    #[test]
    fn no_tool_below_is_an_error() {
        let err = forwarded("#[other::tool] fn f() {}").unwrap_err();
        assert!(err
            .to_string()
            .contains("must stand above rmcp's `#[tool]`"));
    }
}
