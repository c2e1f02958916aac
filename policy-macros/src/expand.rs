//! Code generation for `#[tool]`, `#[toolset]` and `#[tool_policy]`.
//!
//! Every tool gets a spec built once (a `OnceLock`) from data checked at compile time: the
//! policy as JSON text that the runtime's own parser reads back, the input schema, the source
//! location, and the path arguments found by asking each parameter type whether it implements
//! `PathArgument` (so type aliases of `ReadPath` are still recognized).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Ident, ImplItem, ItemFn, ItemImpl, Type};

use policy_runtime::tool::Access;

use crate::sig::{self, Input, Receiver, Sig};
use policy_analysis::dsl::validate::{self, Checked};
use policy_analysis::dsl::{suggest, Attr};

/// Everything the spec of one tool is built from.
struct Model {
    name: String,
    description: String,
    checked: Checked,
    line: usize,
    /// `(json key, parameter type)` of every JSON parameter, probed for `PathArgument`.
    path_candidates: Vec<(String, Type)>,
    schema: serde_json::Value,
}

/// `#[tool(...)]` on a free function.
pub fn tool(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let attr = crate::depth::read_attr(attr, "#[tool]")?;
    let func: ItemFn = syn::parse2(item)?;
    let sig = sig::analyze(&func.sig, "`#[tool]`")?;
    if sig.receiver != Receiver::None {
        return Err(syn::Error::new(
            func.sig.inputs.first().map_or(func.sig.span(), |a| a.span()),
            "`#[tool]` on a method needs `#[toolset]` on its impl block, which builds the tools around a shared `Arc<Self>`",
        ));
    }
    let model = model(&attr, &func.sig.ident, &func.attrs, &sig)?;
    let lint = lint_errors(&func.sig, &func.block, &model);

    let fn_name = func.sig.ident.clone();
    let vis = func.vis.clone();
    let lints: Vec<Attribute> = lint_attrs(&func.attrs).into_iter().cloned().collect();
    let spec_body = spec_body(&model);
    let warnings = warnings(&model, &lints);
    let call_body = call_body(&model, &sig, quote!(#fn_name));
    let tool_impl = tool_impl(&quote!(#fn_name), &call_body);
    // The unit struct shares the function's name (so that `tools![read_file]` and
    // `read_file::tool_spec()` read naturally); hidden from rustdoc, it leaves `[read_file]` in
    // doc comments an unambiguous link to the function, whose doc says what was generated.
    let doc = format!(
        " This function is the tool `{}` (`#[tool]`): collect it with `policy_runtime::tools![{fn_name}]`; `{fn_name}::tool_spec()` is its spec (name, description, policy, path arguments, schema).",
        model.name
    );
    let mut func = func;
    func.attrs.push(syn::parse_quote!(#[doc = ""]));
    func.attrs.push(syn::parse_quote!(#[doc = #doc]));
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #fn_name {}

        #(#lints)*
        impl #fn_name {
            /// The tool's spec: name, description, policy, path arguments, source and schema.
            #vis fn tool_spec() -> &'static ::policy_runtime::tool::ToolSpec {
                #spec_body
            }

            #warnings
        }

        impl ::policy_runtime::macro_support::AnnotatedTool for #fn_name {
            fn shared() -> ::std::sync::Arc<dyn ::policy_runtime::tool::Tool> {
                ::std::sync::Arc::new(#fn_name {})
            }
        }

        #tool_impl

        #lint
    })
}

/// The item of a failed expansion, as it will be compiled next to the error: a function with
/// `dead_code` allowed (no tool uses it now), an impl block without its `#[tool]` attributes
/// (which would each fail with "needs `#[toolset]`"); anything else unchanged.
pub fn fallback(item: TokenStream) -> TokenStream {
    if let Ok(mut func) = syn::parse2::<ItemFn>(item.clone()) {
        func.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
        return quote!(#func);
    }
    if let Ok(mut imp) = syn::parse2::<ItemImpl>(item.clone()) {
        for item in &mut imp.items {
            if let ImplItem::Fn(method) = item {
                method.attrs.retain(|a| !is_tool_attr(a));
            }
        }
        return quote!(#imp);
    }
    item
}

/// `#[toolset]` on an inherent impl block: every method marked `#[tool(...)]` becomes a tool.
pub fn toolset(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !attr.is_empty() {
        return Err(syn::Error::new(
            attr.span(),
            "`#[toolset]` takes no arguments; put the policies on the methods: `#[tool(policy(...))]`",
        ));
    }
    let mut imp: ItemImpl = syn::parse2(item)?;
    if let Some((_, path, _)) = &imp.trait_ {
        return Err(syn::Error::new(
            path.span(),
            "`#[toolset]` goes on an inherent impl block (`impl MyTools { ... }`), not on a trait impl",
        ));
    }
    if !imp.generics.params.is_empty() {
        return Err(syn::Error::new(
            imp.generics.span(),
            "`#[toolset]` cannot be generic: the registry needs one concrete type per tool",
        ));
    }
    let self_ty = (*imp.self_ty).clone();
    let type_name = sig::type_name(&self_ty).ok_or_else(|| {
        syn::Error::new(
            self_ty.span(),
            "`#[toolset]` needs a named type: `impl MyTools { ... }`",
        )
    })?;
    let mut errors: Option<syn::Error> = None;
    let mut generated = Vec::new();
    let mut constructors = Vec::new();
    let mut specs = Vec::new();
    let mut all_warnings = Vec::new();
    for item in &mut imp.items {
        let ImplItem::Fn(method) = item else { continue };
        let Some(index) = method.attrs.iter().position(is_tool_attr) else {
            continue;
        };
        let attr = method.attrs.remove(index);
        let result = (|| -> syn::Result<TokenStream> {
            let args = match &attr.meta {
                syn::Meta::List(list) => list.tokens.clone(),
                _ => TokenStream::new(),
            };
            let parsed: Attr = syn::parse2(args)?;
            let sig = sig::analyze(&method.sig, "`#[tool]`")?;
            let model = model(&parsed, &method.sig.ident, &method.attrs, &sig)?;
            let lint = lint_errors(&method.sig, &method.block, &model);
            let method_name = &method.sig.ident;
            let tool_ty = format_ident!("__ToolpolicyTool_{}_{}", type_name, method_name);
            let spec_body = spec_body(&model);
            let lints = lint_attrs(&method.attrs);
            all_warnings.push(warning_blocks(&model, &lints));
            let (field, target, make) = match sig.receiver {
                Receiver::Shared => (
                    quote!(this: ::std::sync::Arc<#self_ty>,),
                    quote!(self.this.#method_name),
                    quote!(#tool_ty { this: ::std::sync::Arc::clone(self) }),
                ),
                Receiver::None => (
                    quote!(),
                    quote!(<#self_ty>::#method_name),
                    quote!(#tool_ty {}),
                ),
            };
            let call_body = call_body(&model, &sig, target);
            let tool_impl = tool_impl(&quote!(#tool_ty), &call_body);
            constructors.push(quote!(::std::sync::Arc::new(#make) as ::std::sync::Arc<dyn ::policy_runtime::tool::Tool>));
            specs.push(quote!(#tool_ty::tool_spec()));
            Ok(quote! {
                #[doc(hidden)]
                #[allow(non_camel_case_types)]
                struct #tool_ty { #field }

                #(#lints)*
                impl #tool_ty {
                    fn tool_spec() -> &'static ::policy_runtime::tool::ToolSpec {
                        #spec_body
                    }
                }

                #tool_impl

                #lint
            })
        })();
        match result {
            Ok(tokens) => generated.push(tokens),
            Err(e) => match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            },
        }
    }
    if let Some(e) = errors {
        let error = e.to_compile_error();
        return Ok(quote!(#imp #error));
    }
    if generated.is_empty() {
        return Err(syn::Error::new(
            self_ty.span(),
            "`#[toolset]` found no method marked `#[tool(policy(...))]` in this impl block",
        ));
    }
    let warnings = warnings_fn(quote!(#(#all_warnings)*));
    Ok(quote! {
        #imp

        impl #self_ty {
            /// The `#[tool]` methods of this type as tools that share this instance.
            pub fn tools(self: &::std::sync::Arc<Self>) -> ::std::vec::Vec<::std::sync::Arc<dyn ::policy_runtime::tool::Tool>> {
                ::std::vec![#(#constructors),*]
            }

            /// The specs of the `#[tool]` methods, for building a manifest without an instance.
            pub fn tool_specs() -> ::std::vec::Vec<&'static ::policy_runtime::tool::ToolSpec> {
                ::std::vec![#(#specs),*]
            }

            #warnings
        }

        #(#generated)*
    })
}

/// `#[tool_policy(...)]` on a function that another framework (rmcp) dispatches: a spec
/// function `<name>_tool_spec()` next to it, and the gate at the top of its body.
pub fn tool_policy(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let attr = crate::depth::read_attr(attr, "#[tool_policy]")?;
    let mut func: ItemFn = syn::parse2(item)?;
    let fn_name = func.sig.ident.clone();
    // The parameters are the other framework's business; only path-typed ones matter here.
    let mut candidates = Vec::new();
    let mut inputs = Vec::new();
    for arg in &func.sig.inputs {
        let syn::FnArg::Typed(pt) = arg else { continue };
        if sig::type_name(&pt.ty).as_deref() == Some("Parameters") {
            let expr = match &*pt.pat {
                syn::Pat::Ident(p) => {
                    let id = &p.ident;
                    quote_spanned!(pt.ty.span()=> &#id.0)
                }
                syn::Pat::TupleStruct(ts) if ts.elems.len() == 1 => match &ts.elems[0] {
                    syn::Pat::Ident(p) => {
                        let id = &p.ident;
                        quote_spanned!(pt.ty.span()=> &#id)
                    }
                    other => {
                        return Err(syn::Error::new(
                            other.span(),
                            "`#[tool_policy]` judges the parameters as a whole: bind them as `Parameters(args): Parameters<Args>`",
                        ))
                    }
                },
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "`#[tool_policy]` judges the parameters as a whole: bind them as `Parameters(args): Parameters<Args>`",
                    ))
                }
            };
            let gate_json = quote_spanned! {pt.ty.span()=>
                ::policy_runtime::macro_support::GateArgument::gate_json(#expr)
            };
            inputs.push(quote! {
                ::policy_runtime::macro_support::merge_gate_object(&mut __toolpolicy_map, #gate_json);
            });
        } else if let syn::Pat::Ident(p) = &*pt.pat {
            let key = p.ident.to_string();
            let id = &p.ident;
            let ty = &pt.ty;
            candidates.push((key.clone(), (**ty).clone()));
            inputs.push(quote! {
                if let ::std::option::Option::Some(v) = (&&::policy_runtime::macro_support::ValueProbe(&#id)).path_json() {
                    __toolpolicy_map.insert(#key.to_string(), v);
                }
            });
        }
    }
    let sig_model = Sig {
        inputs: Vec::new(),
        receiver: Receiver::None,
        is_async: func.sig.asyncness.is_some(),
        output_span: func.sig.output.span(),
        knows_arguments: false,
    };
    let mut model = model(&attr, &fn_name, &func.attrs, &sig_model)?;
    model.path_candidates = candidates;
    // The arguments' schema belongs to the framework that dispatches the function.
    model.schema = serde_json::json!({"type": "object"});
    let lint = lint_errors(&func.sig, &func.block, &model);
    let spec_body = spec_body(&model);
    // In the spec function's own body (not a closure), so rustc names the warning's item
    // `<fn>_tool_spec::glob_widened_by_sandbox`.
    let widenings = warning_blocks(&model, &lint_attrs(&func.attrs));
    let spec_fn = format_ident!("{}_tool_spec", fn_name);
    let vis = func.vis.clone();
    let name = &model.name;
    let doc = format!("The policy spec of the tool `{name}` (from `#[tool_policy]`), for manifests: see `policy_runtime::macro_support::manifest_of`.");

    if let Err(misplaced) =
        crate::rmcp_tool::forward_description(&mut func.attrs, &model.description)
    {
        // The function stays, so rmcp's router (which already listed it) reports nothing more.
        let misplaced = misplaced.into_compile_error();
        return Ok(quote!(#misplaced #func));
    }

    let policy = &model.checked.policy;
    if policy.gates_paths() || policy.constraints.forbidden == Some(true) {
        // rmcp's `#[tool]` has not run yet (it stands below), so the body is the one written.
        let output: Type = match &func.sig.output {
            syn::ReturnType::Default => syn::parse_quote!(()),
            syn::ReturnType::Type(_, ty) => (**ty).clone(),
        };
        let block = &mut *func.block;
        let deny = deny_expr(&output, name);
        let path_args = path_args_tokens(&model);
        let spec_inline = spec_tokens(&model, path_args);
        let prologue: syn::Stmt = syn::parse_quote! {
            {
                #[allow(unused_imports)]
                use ::policy_runtime::macro_support::{ViaAnyType as _, ViaPathArgument as _, ViaPathValue as _, ViaAnyValue as _};
                static __TOOLPOLICY_SPEC: ::std::sync::OnceLock<::policy_runtime::tool::ToolSpec> = ::std::sync::OnceLock::new();
                let __toolpolicy_spec = __TOOLPOLICY_SPEC.get_or_init(|| #spec_inline);
                #[allow(unused_mut)]
                let mut __toolpolicy_map = ::policy_runtime::macro_support::serde_json::Map::new();
                #(#inputs)*
                if let ::std::result::Result::Err(__toolpolicy_denial) = ::policy_runtime::macro_support::gate_call(
                    __toolpolicy_spec,
                    ::policy_runtime::macro_support::serde_json::Value::Object(__toolpolicy_map),
                ) {
                    return #deny;
                }
            }
        };
        block.stmts.insert(0, prologue);
    }
    let lints = lint_attrs(&func.attrs);
    Ok(quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #(#lints)*
        #vis fn #spec_fn() -> &'static ::policy_runtime::tool::ToolSpec {
            #widenings
            #spec_body
        }

        #func

        #lint
    })
}

/// What a denied `#[tool_policy]` call returns, for the function's return type.
fn deny_expr(output: &Type, name: &str) -> TokenStream {
    let call_tool_result = quote! {
        ::rmcp::model::CallToolResult::error(::std::vec![
            ::rmcp::model::ContentBlock::text(__toolpolicy_denial.to_model_text(#name))
        ])
    };
    match sig::type_name(output).as_deref() {
        Some("CallToolResult") => call_tool_result,
        Some("Result") => {
            let ok_is_result = match output {
                Type::Path(p) => p.path.segments.last().is_some_and(|seg| {
                    matches!(&seg.arguments, syn::PathArguments::AngleBracketed(a)
                        if matches!(a.args.first(), Some(syn::GenericArgument::Type(t))
                            if sig::type_name(t).as_deref() == Some("CallToolResult")))
                }),
                _ => false,
            };
            if ok_is_result {
                quote!(::std::result::Result::Ok(#call_tool_result))
            } else {
                quote!(<#output as ::policy_runtime::macro_support::DeniedReturn>::denied(#name, __toolpolicy_denial))
            }
        }
        _ => {
            quote!(<#output as ::policy_runtime::macro_support::DeniedReturn>::denied(#name, __toolpolicy_denial))
        }
    }
}

/// The function's lint attributes (`#[allow(deprecated)]` silences the widening warning), copied
/// onto the generated items where the warnings are raised.
fn lint_attrs(attrs: &[Attribute]) -> Vec<&Attribute> {
    attrs
        .iter()
        .filter(|a| {
            ["allow", "warn", "deny"]
                .iter()
                .any(|l| a.path().is_ident(l))
        })
        .collect()
}

fn is_tool_attr(attr: &Attribute) -> bool {
    let segs: Vec<String> = attr
        .path()
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    matches!(segs.last(), Some(last) if last == "tool") && segs.first().is_none_or(|f| f != "rmcp")
}

fn model(attr: &Attr, ident: &Ident, attrs: &[Attribute], sig: &Sig) -> syn::Result<Model> {
    let fn_name = ident.to_string().trim_start_matches("r#").to_string();
    let checked = validate::validate(attr, &fn_name)?;
    let name = checked.name.clone().unwrap_or(fn_name);
    let description = checked
        .description
        .clone()
        .unwrap_or_else(|| doc_text(attrs));
    let path_candidates: Vec<(String, Type)> = sig
        .inputs
        .iter()
        .filter_map(|i| match i {
            Input::Json(p) => Some((p.key.clone(), p.ty.clone())),
            Input::Context { .. } => None,
        })
        .collect();
    if sig.knows_arguments {
        for (key, _, span) in &checked.paths {
            if !path_candidates.iter().any(|(k, _)| k == key) {
                let names: Vec<&str> = path_candidates.iter().map(|(k, _)| k.as_str()).collect();
                return Err(syn::Error::new(
                    *span,
                    format!(
                        "`paths({key} = ...)` names no parameter of this function: {}",
                        suggest::help(key, &names)
                    ),
                ));
            }
        }
    }
    let model = Model {
        name,
        description,
        checked,
        line: ident.span().start().line,
        path_candidates,
        schema: sig::input_schema(sig),
    };
    if sig.knows_arguments
        && model.checked.policy.commands.is_some()
        && command_args(&model).is_empty()
    {
        return Err(syn::Error::new(
            ident.span(),
            "`commands(...)` judges the command this tool runs, but no parameter carries it: give the tool a `policy_runtime::command::ShellCommand` (a shell string) or `CommandLine` (an argv) parameter",
        ));
    }
    Ok(model)
}

/// The doc comment, one paragraph per blank line, lines trimmed.
fn doc_text(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
            {
                let text = s.value();
                if text.trim().is_empty() {
                    lines.push(String::new());
                }
                for line in text.lines() {
                    lines.push(line.trim().to_string());
                }
            }
        }
    }
    lines.join("\n").trim().to_string()
}

/// `impl Tool` for a generated tool type whose `tool_spec()` is in scope.
fn tool_impl(ty: &TokenStream, call_body: &TokenStream) -> TokenStream {
    quote! {
        impl ::policy_runtime::tool::Tool for #ty {
            fn spec(&self) -> &::policy_runtime::tool::ToolSpec {
                Self::tool_spec()
            }

            fn call<'a>(
                &'a self,
                ctx: &'a ::policy_runtime::tool::CallContext,
                args: ::policy_runtime::macro_support::serde_json::Value,
            ) -> ::policy_runtime::tool::ToolFuture<'a> {
                #call_body
            }
        }
    }
}

fn lint_errors(sig: &syn::Signature, block: &syn::Block, model: &Model) -> TokenStream {
    let mut errors = crate::lint::check_tool(&model.name, sig, block, &model.checked.policy);
    errors.extend(crate::lint::std_fs_on_path_args(
        block,
        &path_parameters(model),
    ));
    let tokens = errors.iter().map(syn::Error::to_compile_error);
    quote!(#(#tokens)*)
}

/// The parameters whose type is written as `ReadPath`/`WritePath` (or an `Option`/`Vec` of one),
/// for the lint on `std::fs` calls given one.
fn path_parameters(model: &Model) -> Vec<String> {
    fn is_path_type(ty: &Type) -> bool {
        match strip_ref(ty) {
            Type::Path(p) => p.path.segments.last().is_some_and(|seg| {
                seg.ident == "ReadPath"
                    || seg.ident == "WritePath"
                    || match &seg.arguments {
                        syn::PathArguments::AngleBracketed(a) => a
                            .args
                            .iter()
                            .any(|g| matches!(g, syn::GenericArgument::Type(t) if is_path_type(t))),
                        _ => false,
                    }
            }),
            _ => false,
        }
    }
    model
        .path_candidates
        .iter()
        .filter(|(_, ty)| is_path_type(ty))
        .map(|(key, _)| key.clone())
        .collect()
}

/// `(key, role)` of the parameters whose type says path or URL but that are not typed path
/// arguments (`PathBuf`, `url::Url`, ...), for the manifest's roles. A typed path argument
/// among them is told apart at run time by the spec builder, which keeps its own role.
fn other_roles_tokens(model: &Model) -> TokenStream {
    let declared = &model.checked.paths;
    let roles = model
        .path_candidates
        .iter()
        .filter(|(key, _)| !declared.iter().any(|(d, _, _)| d == key))
        .filter_map(|(key, ty)| {
            let role = match crate::sig::other_role(ty)? {
                "url" => quote!(::policy_runtime::role::Role::Url),
                _ => quote!(::policy_runtime::role::Role::Any),
            };
            Some(quote!((#key, #role)))
        });
    quote!(&[#(#roles),*])
}

fn path_args_tokens(model: &Model) -> TokenStream {
    let declared = &model.checked.paths;
    let probed = model
        .path_candidates
        .iter()
        .filter(|(key, _)| !declared.iter().any(|(d, _, _)| d == key))
        .map(|(key, ty)| {
            let ty = strip_ref(ty);
            quote!((#key, (&&::policy_runtime::macro_support::PathProbe::<#ty>::new()).path_access()))
        });
    let declared = declared.iter().map(|(key, access, _)| {
        let access = match access {
            Access::Read => quote!(::policy_runtime::tool::Access::Read),
            _ => quote!(::policy_runtime::tool::Access::Write),
        };
        quote!((#key, ::std::option::Option::Some(#access)))
    });
    quote!(&[#(#probed,)* #(#declared),*])
}

fn strip_ref(ty: &Type) -> &Type {
    match ty {
        Type::Reference(r) => strip_ref(&r.elem),
        other => other,
    }
}

/// The expression that builds the spec.
fn spec_tokens(model: &Model, path_args: TokenStream) -> TokenStream {
    let name = &model.name;
    let description = &model.description;
    let policy_json =
        serde_json::to_string(&model.checked.policy).expect("a validated policy always serializes");
    let schema_json = model.schema.to_string();
    let roles = other_roles_tokens(model);
    let line = model.line as u32;
    let line = if line == 0 {
        quote!(::std::line!())
    } else {
        quote!(#line)
    };
    let commands = command_args(model).into_iter().map(|(key, form)| {
        let form = match form {
            CommandArgForm::Shell => quote!(::policy_runtime::command::CommandForm::Shell),
            CommandArgForm::Argv => quote!(::policy_runtime::command::CommandForm::Argv),
        };
        quote!(.command_arg(#key, #form))
    });
    quote! {{
        #[allow(unused_imports)]
        use ::policy_runtime::macro_support::{ViaAnyType as _, ViaPathArgument as _};
        ::policy_runtime::macro_support::build_spec(
            #name,
            #description,
            #policy_json,
            ::std::file!(),
            #line,
            #schema_json,
            #path_args,
            #roles,
        )#(#commands)*
    }}
}

/// How a parameter carries the tool's command.
enum CommandArgForm {
    Shell,
    Argv,
}

/// The parameters typed `ShellCommand` or `CommandLine`: the tool's command arguments.
fn command_args(model: &Model) -> Vec<(String, CommandArgForm)> {
    model
        .path_candidates
        .iter()
        .filter_map(|(key, ty)| match strip_ref(ty) {
            Type::Path(p) => match p.path.segments.last()?.ident.to_string().as_str() {
                "ShellCommand" => Some((key.clone(), CommandArgForm::Shell)),
                "CommandLine" => Some((key.clone(), CommandArgForm::Argv)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn spec_body(model: &Model) -> TokenStream {
    let spec = spec_tokens(model, path_args_tokens(model));
    quote! {
        static SPEC: ::std::sync::OnceLock<::policy_runtime::tool::ToolSpec> = ::std::sync::OnceLock::new();
        SPEC.get_or_init(|| #spec)
    }
}

/// The widening warnings of a tool in a hidden associated function named `toolpolicy`, so that
/// rustc prints them as `use of deprecated constant
/// `read_file::toolpolicy::glob_widened_by_sandbox`: the OS sandbox enforces glob ...`; empty
/// when there is nothing to warn about.
fn warnings(model: &Model, lints: &[Attribute]) -> TokenStream {
    warnings_fn(warning_blocks(model, &lints.iter().collect::<Vec<_>>()))
}

fn warnings_fn(blocks: TokenStream) -> TokenStream {
    if blocks.is_empty() {
        return blocks;
    }
    quote! {
        #[doc(hidden)]
        #[allow(dead_code)]
        fn toolpolicy() {
            #blocks
        }
    }
}

/// One block per widened glob. Stable Rust has no warning API for proc macros; the use of a
/// `#[deprecated]` item, spanned at the glob, makes rustc print the note as a warning there.
/// The tool's lint attributes sit on the use, so `#[allow(deprecated)]` on the function
/// silences it.
fn warning_blocks(model: &Model, lints: &[&Attribute]) -> TokenStream {
    let blocks = model.checked.widenings.iter().map(|w| {
        let message = &w.message;
        let use_site = quote_spanned!(w.span=> glob_widened_by_sandbox);
        quote! {
            {
                #[deprecated(note = #message)]
                #[allow(non_upper_case_globals)]
                const glob_widened_by_sandbox: () = ();
                #(#lints)*
                let _ = #use_site;
            }
        }
    });
    quote!(#(#blocks)*)
}

/// The body of `Tool::call`: parse every JSON argument, call the function, convert its result.
fn call_body(model: &Model, sig: &Sig, target: TokenStream) -> TokenStream {
    let name = &model.name;
    let keys: Vec<&String> = sig
        .inputs
        .iter()
        .filter_map(|i| match i {
            Input::Json(p) => Some(&p.key),
            Input::Context { .. } => None,
        })
        .collect();
    let mut takes = Vec::new();
    let mut call_args = Vec::new();
    for input in &sig.inputs {
        match input {
            Input::Json(p) => {
                let binding = &p.binding;
                let owned = &p.owned;
                let key = &p.key;
                takes.push(quote_spanned! {p.ty.span()=>
                    let #binding: #owned = __toolpolicy_args.take(#key)?;
                });
                call_args.push(if p.by_ref {
                    quote!(&#binding)
                } else {
                    quote!(#binding)
                });
            }
            Input::Context { by_ref: true } => call_args.push(quote!(ctx)),
            Input::Context { by_ref: false } => {
                call_args.push(quote!(::std::clone::Clone::clone(ctx)))
            }
        }
    }
    let awaited = if sig.is_async {
        quote!(.await)
    } else {
        quote!()
    };
    let convert = quote_spanned! {sig.output_span=>
        ::policy_runtime::macro_support::IntoToolResult::into_tool_result(__toolpolicy_out)
    };
    quote! {
        ::std::boxed::Box::pin(async move {
            #[allow(unused_mut, unused_variables)]
            let mut __toolpolicy_args = ::policy_runtime::macro_support::CallArgs::new(#name, args, &[#(#keys),*])?
                .beneath(&Self::tool_spec().policy);
            #(#takes)*
            let __toolpolicy_out = #target(#(#call_args),*) #awaited;
            #convert
        })
    }
}
