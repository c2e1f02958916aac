//! Finding the policy of a tool: its `#[tool(policy(...))]` or `#[tool_policy(...)]` attribute,
//! read from source with the attribute macros' own reader ([`policy_analysis::dsl`]), so the
//! lint and the build agree on every attribute: what one accepts the other accepts with the
//! same policy, and what one refuses the other reports at the same place.

use policy_runtime::ToolPolicy;
use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// A tool found in source.
#[derive(Clone, Debug)]
pub(crate) struct ToolDecl {
    pub(crate) name: String,
    pub(crate) policy: ToolPolicy,
}

/// The tool declared by `attrs` on the function `fn_name`, if any; `Err` holds every mistake
/// in its attribute, each at its span.
pub(crate) fn tool_decl(
    fn_name: &str,
    attrs: &[syn::Attribute],
) -> Result<Option<ToolDecl>, syn::Error> {
    let fn_name = fn_name.trim_start_matches("r#");
    let mut found = None;
    for attr in attrs {
        let Some(last) = attr.path().segments.last().map(|s| s.ident.to_string()) else {
            continue;
        };
        let syn::Meta::List(list) = &attr.meta else {
            continue;
        };
        match last.as_str() {
            // A `#[tool]` without `policy(...)` belongs to another framework (rmcp) and is not
            // ours.
            "tool" if !has_policy_group(list.tokens.clone()) => continue,
            "tool" | "tool_policy" => {}
            _ => continue,
        }
        let checked = policy_analysis::dsl::read_at(
            list.tokens.clone(),
            list.delimiter.span().close(),
            fn_name,
        )?;
        found = Some(ToolDecl {
            name: checked.name.unwrap_or_else(|| fn_name.to_string()),
            policy: checked.policy,
        });
    }
    Ok(found)
}

/// Whether a top-level argument is `policy(...)`.
fn has_policy_group(tokens: TokenStream) -> bool {
    let mut previous: Option<TokenTree> = None;
    for tt in tokens {
        if let (Some(TokenTree::Ident(i)), TokenTree::Group(g)) = (&previous, &tt) {
            if i == "policy" && g.delimiter() == Delimiter::Parenthesis {
                return true;
            }
        }
        previous = Some(tt);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(src: &str) -> ToolPolicy {
        let f: syn::ItemFn =
            syn::parse_str(&format!("#[tool(policy({src}))] fn t() {{}}")).unwrap();
        tool_decl("t", &f.attrs).unwrap().unwrap().policy
    }

    #[test]
    fn every_capability_form_translates() {
        let p = policy(
            r#"fs.read = ["/data/**"], fs.write = "/out/**", net = deny, exec = allow, env = ["HOME"], risk = medium"#,
        );
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(
            json,
            json!({"fs": {"read": ["/data/**"], "write": ["/out/**"]}, "net": "deny",
                   "exec": "allow", "env": {"allow": ["HOME"]}, "risk": "medium"})
        );
        let p = policy(
            r#"fs(read = "/d/**", write = none), net = ["a.example:443"], exec = ["rg"], env = none"#,
        );
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(
            json,
            json!({"fs": {"read": ["/d/**"], "write": []}, "net": {"hosts": ["a.example:443"]},
                   "exec": {"allow": ["rg"]}, "env": {"allow": []}})
        );
        let f: syn::ItemFn =
            syn::parse_str(r#"#[tool(policy(fs.read = ["relative"]))] fn t() {}"#).unwrap();
        assert!(tool_decl("t", &f.attrs).is_err());
    }

    #[test]
    fn finds_the_tool_attribute_forms() {
        let f: syn::ItemFn = syn::parse_str(
            r#"#[tool(policy(net = allow), name = "grep", constraints(max_invocations = 1))] fn search() {}"#,
        )
        .unwrap();
        let decl = tool_decl("search", &f.attrs).unwrap().unwrap();
        assert_eq!(decl.name, "grep");
        let f: syn::ItemFn =
            syn::parse_str(r#"#[tool(name = grep, policy(net = allow))] fn search() {}"#).unwrap();
        assert_eq!(tool_decl("search", &f.attrs).unwrap().unwrap().name, "grep");
        let f: syn::ItemFn = syn::parse_str(
            r#"#[tool(description = "x")] #[tool_policy(policy(env = deny))] fn t() {}"#,
        )
        .unwrap();
        let decl = tool_decl("t", &f.attrs).unwrap().unwrap();
        assert_eq!(decl.name, "t");
        assert!(decl.policy.env.is_some());
        let f: syn::ItemFn =
            syn::parse_str(r#"#[tool(description = "rmcp only")] fn t() {}"#).unwrap();
        assert!(tool_decl("t", &f.attrs).unwrap().is_none());
    }

    #[test]
    fn mistakes_are_refused_at_their_place() {
        let f: syn::File =
            syn::parse_str("#[tool(policy(net = none,\n risk = \"low\"))]\nfn t() {}").unwrap();
        let syn::Item::Fn(f) = &f.items[0] else {
            panic!("a function")
        };
        let err = tool_decl("t", &f.attrs).unwrap_err();
        let start = err.span().start();
        assert_eq!((start.line, start.column), (2, 8), "{err}");
        assert!(err.to_string().contains("without quotes"), "{err}");
        // An error at the end of the attribute points at its closing parenthesis.
        let f: syn::ItemFn =
            syn::parse_str("#[tool(policy(net = deny), name =)] fn t() {}").unwrap();
        let err = tool_decl("t", &f.attrs).unwrap_err();
        assert_eq!(err.span().start().column, 33, "{err}");
    }
}
