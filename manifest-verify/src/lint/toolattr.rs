//! Finding the policy of a tool: its `#[tool(policy(...))]` or `#[tool_policy(...)]` attribute,
//! read from source.
//!
//! Only the syntax is translated here: each `key = value` of the DSL becomes the JSON of the manifest ([`policy_runtime::reference::manifest`])
//! and is deserialized into [`ToolPolicy`] by policy-runtime, so the model and its validation
//! exist once. Constraints and limits do not matter to the lint and are skipped.

use policy_runtime::ToolPolicy;
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use serde_json::{json, Map, Value};

/// A tool found in source.
#[derive(Clone, Debug)]
pub(crate) struct ToolDecl {
    pub(crate) name: String,
    pub(crate) policy: ToolPolicy,
}

/// The tool declared by `attrs` on the function `fn_name`, if any.
pub(crate) fn tool_decl(
    fn_name: &str,
    attrs: &[syn::Attribute],
) -> Result<Option<ToolDecl>, String> {
    let mut found = None;
    for attr in attrs {
        let Some(last) = attr.path().segments.last().map(|s| s.ident.to_string()) else {
            continue;
        };
        let syn::Meta::List(list) = &attr.meta else {
            continue;
        };
        let args = split_args(list.tokens.clone());
        let policy_tokens = match last.as_str() {
            // `#[tool(policy(...), ...)]`; a `#[tool]` without `policy(...)` belongs to another
            // framework (rmcp) and is not ours.
            "tool" => match args.iter().find_map(|a| group_named(a, "policy")) {
                Some(p) => p,
                None => continue,
            },
            // `#[tool_policy(...)]` takes the policy keys directly, or a `policy(...)` group.
            "tool_policy" => args
                .iter()
                .find_map(|a| group_named(a, "policy"))
                .unwrap_or_else(|| list.tokens.clone()),
            _ => continue,
        };
        let name = args
            .iter()
            .find_map(|a| name_value(a, "name"))
            .unwrap_or_else(|| fn_name.to_string());
        let policy = policy_from_tokens(policy_tokens)
            .map_err(|e| format!("cannot read the policy of tool `{name}`: {e}"))?;
        found = Some(ToolDecl { name, policy });
    }
    Ok(found)
}

/// Top-level comma-separated arguments.
fn split_args(tokens: TokenStream) -> Vec<Vec<TokenTree>> {
    let mut args = vec![Vec::new()];
    for tt in tokens {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => args.push(Vec::new()),
            _ => args.last_mut().unwrap().push(tt),
        }
    }
    args.retain(|a| !a.is_empty());
    args
}

fn group_named(arg: &[TokenTree], name: &str) -> Option<TokenStream> {
    match arg {
        [TokenTree::Ident(i), TokenTree::Group(g)]
            if i == name && g.delimiter() == Delimiter::Parenthesis =>
        {
            Some(g.stream())
        }
        _ => None,
    }
}

/// `key = "text"`, or `key = word` (the macro takes a tool name either way).
fn name_value(arg: &[TokenTree], key: &str) -> Option<String> {
    match arg {
        [TokenTree::Ident(i), TokenTree::Punct(p), TokenTree::Literal(l)]
            if i == key && p.as_char() == '=' =>
        {
            string_literal(l)
        }
        [TokenTree::Ident(i), TokenTree::Punct(p), TokenTree::Ident(word)]
            if i == key && p.as_char() == '=' =>
        {
            Some(word.to_string())
        }
        _ => None,
    }
}

fn string_literal(lit: &proc_macro2::Literal) -> Option<String> {
    match syn::Lit::new(lit.clone()) {
        syn::Lit::Str(s) => Some(s.value()),
        _ => None,
    }
}

/// What one DSL value is: a bare word, a string, or a list of strings and words.
enum Word {
    Ident(String),
    Str(String),
    List(Vec<String>),
}

fn value(tokens: &[TokenTree]) -> Result<Word, String> {
    match tokens {
        [TokenTree::Ident(i)] => Ok(Word::Ident(i.to_string())),
        [TokenTree::Literal(l)] => string_literal(l)
            .map(Word::Str)
            .ok_or_else(|| format!("expected a string, found `{l}`")),
        [TokenTree::Group(g)] if g.delimiter() == Delimiter::Bracket => {
            let mut items = Vec::new();
            for item in split_args(g.stream()) {
                match item.as_slice() {
                    [TokenTree::Literal(l)] => items.push(
                        string_literal(l)
                            .ok_or_else(|| format!("expected a string, found `{l}`"))?,
                    ),
                    [TokenTree::Ident(i)] => items.push(i.to_string()),
                    other => {
                        return Err(format!(
                            "unexpected `{}` in a list",
                            other.iter().map(|t| t.to_string()).collect::<String>()
                        ))
                    }
                }
            }
            Ok(Word::List(items))
        }
        other => Err(format!(
            "unexpected value `{}`",
            other
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        )),
    }
}

fn glob_list(v: Word) -> Value {
    match v {
        Word::Ident(w) if w == "none" => json!([]),
        Word::Ident(w) | Word::Str(w) => json!([w]),
        Word::List(l) => json!(l),
    }
}

/// Translates `fs.read = [...], net = deny, ...` into a [`ToolPolicy`].
pub(crate) fn policy_from_tokens(tokens: TokenStream) -> Result<ToolPolicy, String> {
    let mut root = Map::new();
    let mut fs = Map::new();
    for arg in split_args(tokens) {
        // `fs(read = ..., write = ...)` is the grouped spelling of `fs.read`/`fs.write`.
        if let Some(inner) = group_named(&arg, "fs") {
            for part in split_args(inner) {
                let eq = part
                    .iter()
                    .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == '='))
                    .ok_or_else(|| {
                        "expected `read = ...` or `write = ...` in `fs(...)`".to_string()
                    })?;
                let key: String = part[..eq].iter().map(|t| t.to_string()).collect();
                fs.insert(key, glob_list(value(&part[eq + 1..])?));
            }
            continue;
        }
        let eq = arg
            .iter()
            .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == '='))
            .ok_or_else(|| "expected `key = value`".to_string())?;
        let key: String = arg[..eq].iter().map(|t| t.to_string()).collect();
        let v = value(&arg[eq + 1..])?;
        let list = glob_list;
        let stance = |v: Word, list_key: &str| -> Value {
            match v {
                Word::Ident(w) if w == "deny" || w == "allow" => json!(w),
                Word::Ident(w) if w == "none" => json!({ list_key: [] }),
                other => json!({ list_key: list(other) }),
            }
        };
        match key.as_str() {
            "fs.read" => {
                fs.insert("read".into(), list(v));
            }
            "fs.write" => {
                fs.insert("write".into(), list(v));
            }
            // `net = none` is the empty host list, as the attribute macro reads it.
            "net" => {
                root.insert("net".into(), stance(v, "hosts"));
            }
            "exec" => {
                root.insert("exec".into(), stance(v, "allow"));
            }
            "env" => {
                root.insert("env".into(), stance(v, "allow"));
            }
            "risk" => {
                if let Word::Ident(w) | Word::Str(w) = v {
                    root.insert("risk".into(), json!(w));
                }
            }
            // Not capabilities: nothing for the lint to check.
            _ => {}
        }
    }
    if !fs.is_empty() {
        root.insert("fs".into(), Value::Object(fs));
    }
    serde_json::from_value(Value::Object(root)).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(src: &str) -> ToolPolicy {
        policy_from_tokens(src.parse().unwrap()).unwrap()
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
        assert!(policy_from_tokens(r#"fs.read = ["relative"]"#.parse().unwrap()).is_err());
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
        let f: syn::ItemFn =
            syn::parse_str(r#"#[tool(description = "x")] #[tool_policy(env = deny)] fn t() {}"#)
                .unwrap();
        let decl = tool_decl("t", &f.attrs).unwrap().unwrap();
        assert_eq!(decl.name, "t");
        assert!(decl.policy.env.is_some());
        let f: syn::ItemFn =
            syn::parse_str(r#"#[tool(description = "rmcp only")] fn t() {}"#).unwrap();
        assert!(tool_decl("t", &f.attrs).unwrap().is_none());
    }
}
