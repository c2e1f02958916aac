//! # policy-macros
//!
//! Attributes that declare what an AI agent's tool may touch, checked when the crate compiles.
//!
//! * [`macro@tool`] on a function makes it a tool: the function stays callable as written, and a
//!   type of the same name implements `policy_runtime::Tool` (JSON arguments, typed path
//!   arguments wired to the gate, the policy, a manifest entry with its source location).
//! * [`macro@toolset`] on an impl block does the same for its `#[tool]` methods, around a shared
//!   `Arc<Self>`.
//! * [`macro@tool_policy`] attaches the policy and the gate to a function that another
//!   framework's `#[tool]` owns (rmcp).
//!
//! ```
//! use policy_macros::tool;
//! use policy_runtime::registry::ToolCall;
//! use policy_runtime::{ReadPath, ToolError};
//!
//! /// Read a UTF-8 file.
//! #[tool(policy(fs.read = ["/data/**"], net = deny, risk = low), constraints(max_invocations = 3))]
//! fn read_file(path: ReadPath) -> Result<String, ToolError> {
//!     Ok(path.read_to_string()?) // beneath `/data`: a symlink out of it is refused
//! }
//!
//! let registry = policy_runtime::macro_support::registry_of(policy_runtime::tools![read_file])?;
//! let denied = registry
//!     .start_invocation()
//!     .call_blocking(ToolCall::new("read_file", serde_json::json!({"path": "/etc/passwd"})));
//! assert!(denied.denial().is_some());
//! assert!(registry.manifest().to_json().contains("\"/data/**\""));
//! // In a test: policy_runtime::testing::assert_manifest_fresh("tool-manifest.json", &registry.manifest());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The attribute's text is read by [`policy_analysis::dsl`] (the one reader of the policy
//! language, shared with `toolpolicy-lint`: syntax tree, meaning and every check, errors at
//! their spans); this crate measures the item's depth first and generates the code (`expand`).

use proc_macro::TokenStream;

mod depth;
mod expand;
mod lint;
mod rmcp_tool;
mod sig;

#[cfg(test)]
mod dsl_fuzz;
#[cfg(test)]
#[path = "../../policy-runtime/tests/fuzz_support/mod.rs"]
mod fuzz_support;
#[cfg(test)]
mod lint_corpus;

/// Expands one attribute: `expand` runs on the item unless the item is nested too deeply for
/// syn (see [`depth`]), which is refused before anything parses it. On error the error stands
/// next to the item as written (without `#[tool]` attributes that would fail again), so that
/// the item's own uses and calls still resolve and the error is not followed by spurious
/// `unused import` or `cannot find` diagnostics; a too-deep item is left out, since taking out
/// its attributes would mean parsing it.
fn emit(
    attribute: &str,
    expand: fn(
        proc_macro2::TokenStream,
        proc_macro2::TokenStream,
    ) -> syn::Result<proc_macro2::TokenStream>,
    attr: TokenStream,
    item: TokenStream,
) -> TokenStream {
    let item: proc_macro2::TokenStream = item.into();
    if let Err(e) = depth::check(&item, proc_macro2::Span::call_site(), attribute) {
        return e.into_compile_error().into();
    }
    match expand(attr.into(), item.clone()) {
        Ok(tokens) => tokens.into(),
        Err(e) => {
            let error = e.into_compile_error();
            let item = expand::fallback(item);
            quote::quote!(#item #error).into()
        }
    }
}

/// Declares a tool and its policy.
///
/// ```text
/// #[tool(
///     policy(fs.read = ["/data/**"], fs.write = "/out/**", net = deny | allow | ["host:port", ...],
///            exec = deny | allow | ["rg", ...], env = deny | ["HOME", "AWS_*"],
///            risk = low | medium | high | critical),
///     constraints(max_invocations = 3, only_after = [fetch], forbidden = true, requires_approval = true),
///     limits(timeout_ms = 5000, memory_bytes = .., cpu_seconds = .., max_processes = ..,
///            max_output_bytes = .., max_file_bytes = .., max_open_files = ..),
///     paths(dest = write, src = read),
///     name = "override", description = "override of the doc comment",
/// )]
/// ```
///
/// `none` is the empty list and a single string is a one-element list. Parameters are the JSON
/// arguments (by name); `ReadPath`, `WritePath` and `Vec`/`Option` of them are judged by the
/// gate as reads or writes (so are parameters named in `paths(...)`, e.g. a `String`); a
/// `&CallContext` parameter receives the call's context. Globs that
/// the OS sandbox can only enforce as a wider tree produce a warning naming that tree.
///
/// When the arguments are parsed, each `ReadPath`/`WritePath` is bound to the folder of the glob
/// that admitted it, and its methods (`read`, `write`, `list`, ...) resolve beneath that folder;
/// handing such a parameter to `std::fs` or `tokio::fs` instead is a compile error naming the
/// method to use.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    emit("#[tool]", expand::tool, attr, item)
}

/// Makes the `#[tool(...)]` methods of an inherent impl block into tools.
///
/// It adds `fn tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>>` (the tools, sharing the instance)
/// and `fn tool_specs() -> Vec<&'static ToolSpec>` to the type.
#[proc_macro_attribute]
pub fn toolset(attr: TokenStream, item: TokenStream) -> TokenStream {
    emit("#[toolset]", expand::toolset, attr, item)
}

/// The policy of a function that rmcp's `#[tool]` owns (inside a `#[tool_router]` impl).
///
/// It stands above rmcp's `#[tool]`, and hands it the tool's description (the doc comment, or
/// `description = ".."` here) as `#[tool(description = ..)]` unless that attribute has one:
/// rmcp alone drops the doc comment when another attribute follows it. A `#[tool_policy]` with
/// no rmcp `#[tool]` below it is a compile error.
///
/// It generates `<fn>_tool_spec() -> &'static ToolSpec` for the manifest, and, when the policy
/// declares `fs` or `forbidden`, judges the call's paths at the top of the body: the fields of
/// `Parameters(args)` (which must implement `Serialize`) and any `ReadPath`/`WritePath`
/// parameter. Fields of `args` are judged as accesses of unknown direction unless named in
/// `paths(field = write)` or `paths(field = read)`. A denied call returns `CallToolResult::error(..)`, a `String`, or `Err(E::from(denial))`.
/// The other framework parses the parameters, so their `ReadPath`/`WritePath` values are not
/// bound to a folder: open them through `ReadPath::admit(&raw, &spec.policy)` (or
/// `WritePath::admit`), which judges and binds them as the gate does.
#[proc_macro_attribute]
pub fn tool_policy(attr: TokenStream, item: TokenStream) -> TokenStream {
    emit("#[tool_policy]", expand::tool_policy, attr, item)
}
