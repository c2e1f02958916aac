//! What a tool function's signature means to the generated code: which parameters come from
//! the JSON arguments (and as which Rust type), which one is the call context, the receiver,
//! and the JSON Schema of the arguments.

use proc_macro2::Span;
use serde_json::{json, Value};
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, Ident, Pat, PathArguments, Type};

/// One parameter filled from the JSON arguments.
pub struct JsonParam {
    /// The argument's key in the JSON object (the parameter's name).
    pub key: String,
    /// The local variable the generated code binds it to.
    pub binding: Ident,
    /// The type deserialized: the parameter's type, or the owned form of a reference.
    pub owned: Type,
    /// The parameter is a reference: pass `&binding`.
    pub by_ref: bool,
    /// The parameter's type as written.
    pub ty: Type,
}

/// One parameter, in order.
pub enum Input {
    /// Filled from the JSON arguments.
    Json(Box<JsonParam>),
    /// The `CallContext` of the call, by reference or by value.
    Context { by_ref: bool },
}

/// How a method takes `self`.
#[derive(PartialEq, Eq)]
pub enum Receiver {
    /// A free function or an associated function.
    None,
    /// `&self`.
    Shared,
}

/// The analysed signature.
pub struct Sig {
    pub inputs: Vec<Input>,
    pub receiver: Receiver,
    pub is_async: bool,
    /// Where the return type is written (the function name when there is none), for errors
    /// about it.
    pub output_span: Span,
    /// The parameters are the JSON arguments (false for `#[tool_policy]`, whose arguments
    /// belong to another framework).
    pub knows_arguments: bool,
}

/// Analyses a tool function's signature; `what` names the attribute in messages.
pub fn analyze(sig: &syn::Signature, what: &str) -> syn::Result<Sig> {
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    if let Some(param) = sig
        .generics
        .params
        .iter()
        .find(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
    {
        push(syn::Error::new(
            param.span(),
            format!("a {what} function cannot be generic: the registry calls it with JSON arguments, so every parameter needs a concrete type"),
        ));
    }
    if let Some(v) = &sig.variadic {
        push(syn::Error::new(v.span(), "a tool cannot be variadic"));
    }
    let mut receiver = Receiver::None;
    let mut inputs = Vec::new();
    for (i, arg) in sig.inputs.iter().enumerate() {
        match arg {
            FnArg::Receiver(r) => {
                if r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none() {
                    receiver = Receiver::Shared;
                } else {
                    push(syn::Error::new(
                        r.span(),
                        "a tool method takes `&self`: the registry shares one instance between calls (use interior mutability, e.g. a Mutex, for state)",
                    ));
                }
            }
            FnArg::Typed(pt) => {
                if is_context(&pt.ty) {
                    inputs.push(Input::Context {
                        by_ref: matches!(&*pt.ty, Type::Reference(_)),
                    });
                    continue;
                }
                let key = match &*pt.pat {
                    Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() => {
                        p.ident.to_string().trim_start_matches("r#").to_string()
                    }
                    other => {
                        push(syn::Error::new(
                            other.span(),
                            "a tool parameter needs a plain name, which becomes the key of the JSON argument: write `name: Type`",
                        ));
                        continue;
                    }
                };
                let (owned, by_ref) = match &*pt.ty {
                    Type::Reference(r) if r.mutability.is_some() => {
                        push(syn::Error::new(
                            r.span(),
                            "a tool parameter cannot be `&mut`: it is deserialized from the JSON arguments; take it by value",
                        ));
                        continue;
                    }
                    Type::Reference(r) => (owned_form(&r.elem), true),
                    Type::ImplTrait(t) => {
                        push(syn::Error::new(
                            t.span(),
                            "a tool parameter cannot be `impl Trait`: name a concrete type that implements `serde::Deserialize`",
                        ));
                        continue;
                    }
                    ty => (ty.clone(), false),
                };
                inputs.push(Input::Json(Box::new(JsonParam {
                    key,
                    binding: Ident::new(&format!("__toolpolicy_arg{i}"), Span::call_site()),
                    owned,
                    by_ref,
                    ty: (*pt.ty).clone(),
                })));
            }
        }
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(Sig {
            inputs,
            receiver,
            is_async: sig.asyncness.is_some(),
            output_span: match &sig.output {
                syn::ReturnType::Default => sig.ident.span(),
                syn::ReturnType::Type(_, ty) => ty.span(),
            },
            knows_arguments: true,
        }),
    }
}

fn last_ident(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        Type::Group(g) => last_ident(&g.elem),
        Type::Paren(p) => last_ident(&p.elem),
        _ => None,
    }
}

/// The last path segment's name of a type, e.g. `Parameters` for `rmcp::Parameters<T>`.
pub fn type_name(ty: &Type) -> Option<String> {
    last_ident(ty).map(|s| s.ident.to_string())
}

fn is_context(ty: &Type) -> bool {
    let inner = match ty {
        Type::Reference(r) => &*r.elem,
        other => other,
    };
    type_name(inner).as_deref() == Some("CallContext")
}

/// The owned type deserialized for a `&T` parameter (`&str` → `String`, `&[T]` → `Vec<T>`,
/// `&Path` → `PathBuf`), which the call then borrows.
fn owned_form(elem: &Type) -> Type {
    match elem {
        Type::Slice(s) => {
            let inner = &s.elem;
            syn::parse_quote!(::std::vec::Vec<#inner>)
        }
        other => match type_name(other).as_deref() {
            Some("str") => syn::parse_quote!(::std::string::String),
            Some("Path") => syn::parse_quote!(::std::path::PathBuf),
            _ => other.clone(),
        },
    }
}

fn first_type_arg(seg: &syn::PathSegment, n: usize) -> Option<&Type> {
    match &seg.arguments {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .nth(n),
        _ => None,
    }
}

/// The manifest role of a parameter that is not a `ReadPath`/`WritePath`, read from its type
/// (through references, `Option`, `Vec`, `Box` and slices): `any` for a standard path type,
/// `url` for a URL type, `None` for everything else.
pub fn other_role(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Reference(r) => return other_role(&r.elem),
        Type::Slice(s) => return other_role(&s.elem),
        Type::Array(a) => return other_role(&a.elem),
        _ => {}
    }
    let seg = last_ident(ty)?;
    match seg.ident.to_string().as_str() {
        "PathBuf" | "Path" => Some("any"),
        "Url" | "Uri" => Some("url"),
        "Option" | "Vec" | "Box" | "VecDeque" => first_type_arg(seg, 0).and_then(other_role),
        _ => None,
    }
}

/// Whether the parameter may be left out (it is an `Option`).
pub fn is_optional(ty: &Type) -> bool {
    type_name(ty).as_deref() == Some("Option")
}

/// The JSON Schema of one type, read from its syntax; unknown types admit any value.
pub fn schema_of(ty: &Type) -> Value {
    match ty {
        Type::Reference(r) => return schema_of(&r.elem),
        Type::Slice(s) => return json!({"type": "array", "items": schema_of(&s.elem)}),
        Type::Array(a) => return json!({"type": "array", "items": schema_of(&a.elem)}),
        Type::Tuple(t) if t.elems.is_empty() => return json!({"type": "null"}),
        _ => {}
    }
    let Some(seg) = last_ident(ty) else {
        return json!({});
    };
    let name = seg.ident.to_string();
    match name.as_str() {
        "String" | "str" | "char" | "Cow" => json!({"type": "string"}),
        "ReadPath" => json!({"type": "string", "description": "A path the tool reads."}),
        "WritePath" => {
            json!({"type": "string", "description": "A path the tool creates, modifies or deletes."})
        }
        "PathBuf" | "Path" => json!({"type": "string"}),
        "ShellCommand" => {
            json!({"type": "string", "description": "A shell command line, judged by the tool's command policy."})
        }
        "CommandLine" => json!({
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "A command as an argument vector (program first), judged by the tool's command policy."
        }),
        "bool" => json!({"type": "boolean"}),
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => {
            json!({"type": "integer", "minimum": 0})
        }
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => json!({"type": "integer"}),
        "f32" | "f64" => json!({"type": "number"}),
        "Option" | "Box" | "Arc" | "Rc" => first_type_arg(seg, 0).map_or(json!({}), schema_of),
        "Vec" | "VecDeque" | "HashSet" | "BTreeSet" => json!({
            "type": "array",
            "items": first_type_arg(seg, 0).map_or(json!({}), schema_of),
        }),
        "HashMap" | "BTreeMap" => json!({
            "type": "object",
            "additionalProperties": first_type_arg(seg, 1).map_or(json!({}), schema_of),
        }),
        _ => json!({}),
    }
}

/// The JSON Schema of the arguments object.
pub fn input_schema(sig: &Sig) -> Value {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for input in &sig.inputs {
        if let Input::Json(p) = input {
            properties.insert(p.key.clone(), schema_of(&p.ty));
            if !is_optional(&p.ty) {
                required.push(Value::String(p.key.clone()));
            }
        }
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_follows_the_types() {
        let sig: syn::Signature = syn::parse_quote!(
            fn f(path: ReadPath, n: Option<u32>, tags: &[String], ctx: &CallContext, m: BTreeMap<String, f64>)
        );
        let sig = analyze(&sig, "`#[tool]`").unwrap();
        assert_eq!(sig.inputs.len(), 5);
        let schema = input_schema(&sig);
        assert_eq!(schema["required"], json!(["path", "tags", "m"]));
        assert_eq!(
            schema["properties"]["n"],
            json!({"type": "integer", "minimum": 0})
        );
        assert_eq!(
            schema["properties"]["tags"],
            json!({"type": "array", "items": {"type": "string"}})
        );
        assert_eq!(
            schema["properties"]["m"]["additionalProperties"],
            json!({"type": "number"})
        );
        assert!(schema["properties"].get("ctx").is_none());
    }

    #[test]
    fn roles_of_other_types() {
        for (ty, role) in [
            (quote::quote!(PathBuf), Some("any")),
            (quote::quote!(&std::path::Path), Some("any")),
            (quote::quote!(Option<Vec<PathBuf>>), Some("any")),
            (quote::quote!(url::Url), Some("url")),
            (quote::quote!(&[Url]), Some("url")),
            (quote::quote!(String), None),
            (quote::quote!(ReadPath), None),
        ] {
            let ty: Type = syn::parse2(ty.clone()).unwrap();
            assert_eq!(other_role(&ty), role);
        }
    }

    #[test]
    fn rejects_what_json_cannot_fill() {
        for sig in [
            quote::quote!(fn f<T>(x: T)),
            quote::quote!(fn f((a, b): (u8, u8))),
            quote::quote!(fn f(x: &mut String)),
            quote::quote!(fn f(&mut self)),
        ] {
            let sig: syn::Signature = syn::parse2(sig).unwrap();
            assert!(analyze(&sig, "`#[tool]`").is_err());
        }
    }
}
