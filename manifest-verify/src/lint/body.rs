//! What one function or macro body does, by the engine's walker
//! ([`policy_analysis::lint::walk`]) with tier 2's name resolution: the crate and workspace
//! loaded in [`Program`], so that paths, methods, fields and macros lead to the functions of the
//! analysed code (the edges of the call graph).

use policy_analysis::lint::capability::{classify_path, Effect};
use policy_analysis::lint::names::{Named, Names};
use policy_analysis::lint::syntax::segment_names;
use policy_analysis::lint::walk::{fn_sites, macro_sites, Limits, Site, SiteKind, Use};

use super::program::{ModId, NodeId, NodeKind, Program};
use super::resolve::Target;

/// A type of the analysed code: `(unit, type name)`.
pub(crate) type TypeId = (usize, String);

/// Names as the body of a node of `program` sees them: those of its module, and `Self` of its
/// `impl` block.
struct NodeNames<'p> {
    program: &'p Program,
    module: ModId,
    self_ty: Option<&'p str>,
    /// The function's generic parameters (and its impl's), with their bounds' traits.
    generics: &'p [(String, Vec<String>)],
    /// Its parameters reached through traits.
    dyn_params: &'p [(String, Vec<String>)],
    /// Its declared return type.
    ret: Option<&'p syn::Type>,
}

fn named(target: Target) -> Named<NodeId, TypeId> {
    match target {
        Target::Nodes(nodes) => Named::Nodes(nodes),
        Target::Type(unit, ty) => Named::Type((unit, ty)),
        Target::External(path) => Named::External(path),
        Target::Foreign(name) => Named::Foreign(name),
        Target::Module(_) | Target::Unknown => Named::Unknown,
    }
}

impl Names for NodeNames<'_> {
    type Node = NodeId;
    type Type = TypeId;

    fn resolve(&self, segments: &[String], absolute: bool) -> Named<NodeId, TypeId> {
        // `S::create(..)` with `S: Store`: every impl's `create`.
        if let (false, [first, name]) = (absolute, segments) {
            if let Some((_, traits)) = self.generics.iter().find(|(g, _)| g == first) {
                let nodes = self.trait_methods(traits, name);
                if !nodes.is_empty() {
                    return Named::Nodes(nodes);
                }
            }
        }
        let target = self.program.resolve(self.module, segments, absolute);
        if let Some(macros) = self.hidden_by_item_macros(&target, segments, absolute) {
            // Code the lint cannot see: reported as unanalysable, never passed.
            return Named::Foreign(format!(
                "{}, which only an item-level macro can define ({macros}, not analysed)",
                segments.join("::")
            ));
        }
        named(target)
    }

    fn trait_params(&self) -> &[(String, Vec<String>)] {
        self.dyn_params
    }

    fn field_traits(&self, ty: &TypeId, field: &str) -> Option<Vec<String>> {
        self.program.trait_fields.get(ty)?.get(field).cloned()
    }

    fn trait_methods(&self, traits: &[String], name: &str) -> Vec<NodeId> {
        let mut nodes = Vec::new();
        for t in traits {
            let impls = self.program.trait_impls.get(t).into_iter().flatten();
            let defaults = (0..self.program.units.len()).map(|u| (u, t.clone()));
            for key in impls.cloned().chain(defaults) {
                if let Some(found) = self.program.assoc.get(&key).and_then(|a| a.get(name)) {
                    nodes.extend(found.iter().copied());
                }
            }
        }
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    fn drop_of(&self, ty: &TypeId) -> Option<&[NodeId]> {
        if !self.program.drops.contains(ty) {
            return None;
        }
        self.associated(ty, "drop")
    }

    fn error_type(&self) -> Named<NodeId, TypeId> {
        match self.ret.and_then(result_error) {
            Some(error) => returned(
                self.program,
                error,
                self.module,
                self.self_ty,
                self.generics,
            ),
            None => Named::Unknown,
        }
    }

    fn deref_target(&self, ty: &TypeId) -> Named<NodeId, TypeId> {
        let Some((module, target)) = self.program.derefs.get(ty) else {
            return Named::Unknown;
        };
        let segs = segment_names(target);
        named(
            self.program
                .resolve(*module, &segs, target.leading_colon.is_some()),
        )
    }

    fn declares_trait(&self, name: &str) -> bool {
        self.program.traits.contains(name)
    }

    fn self_type(&self) -> Option<TypeId> {
        let unit = self.program.modules[self.module].unit;
        self.self_ty.map(|ty| (unit, ty.to_string()))
    }

    fn associated(&self, ty: &TypeId, name: &str) -> Option<&[NodeId]> {
        self.program.assoc.get(ty)?.get(name).map(Vec::as_slice)
    }

    fn methods_named(&self, name: &str) -> Option<&[NodeId]> {
        self.program.methods.get(name).map(Vec::as_slice)
    }

    fn returns(&self, nodes: &[NodeId]) -> Named<NodeId, TypeId> {
        let mut found: Option<Named<NodeId, TypeId>> = None;
        for n in nodes {
            let node = &self.program.nodes[*n];
            let NodeKind::Fn {
                ret: Some(ret),
                self_ty,
                generics,
                ..
            } = &node.kind
            else {
                return Named::Unknown;
            };
            let named = returned(self.program, ret, node.module, self_ty.as_deref(), generics);
            match (&found, &named) {
                (_, Named::Unknown) => return Named::Unknown,
                (None, _) => found = Some(named),
                (Some(a), b) if a == b => {}
                _ => return Named::Unknown,
            }
        }
        found.unwrap_or(Named::Unknown)
    }

    fn field(&self, ty: &TypeId, field: &str) -> Named<NodeId, TypeId> {
        let Some((module, path)) = self.program.fields.get(ty).and_then(|f| f.get(field)) else {
            return Named::Unknown;
        };
        let segs = segment_names(path);
        named(
            self.program
                .resolve(*module, &segs, path.leading_colon.is_some()),
        )
    }

    fn macro_named(&self, name: &str) -> Option<&[NodeId]> {
        self.program.macros.get(name).map(Vec::as_slice)
    }
}

/// Names every Rust module sees without a `use`: the prelude's values and types, and the
/// primitive types. A call to one of them is never a name an item-level macro defined.
const PRELUDE: &[&str] = &[
    "Some",
    "None",
    "Ok",
    "Err",
    "drop",
    "Box",
    "Vec",
    "String",
    "Option",
    "Result",
    "Default",
    "Clone",
    "ToString",
    "ToOwned",
    "Iterator",
    "IntoIterator",
    "From",
    "Into",
    "TryFrom",
    "TryInto",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
    "AsRef",
    "AsMut",
    "Fn",
    "FnMut",
    "FnOnce",
    "Send",
    "Sync",
    "Sized",
    "Copy",
    "Drop",
    "Extend",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "f32",
    "f64",
    "bool",
    "char",
    "str",
    "Self",
    "self",
    "super",
    "crate",
    "std",
    "core",
    "alloc",
    "proc_macro",
];

/// `E` of a declared `Result<T, E>`.
fn result_error(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    a.args
        .iter()
        .filter_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .nth(1)
}

impl NodeNames<'_> {
    /// The item-level macros (`include!`, `cfg_if!`, a macro generating a `mod`) that alone can
    /// define what `segments` names, when the analysed code defines nothing of that name: a
    /// path left unresolved in a module holding such macros, or `m::f` into such a module `m`.
    fn hidden_by_item_macros(
        &self,
        target: &Target,
        segments: &[String],
        absolute: bool,
    ) -> Option<String> {
        let first = segments.first()?;
        if absolute {
            return None;
        }
        match target {
            Target::External(path) if classify_path(path).is_none() => {
                let module = &self.program.modules[self.module];
                let unit = &self.program.units[module.unit];
                // A bare name in upper case is a constant, a static or a unit type (by
                // convention): evaluated at compile time or doing nothing by itself.
                let constant =
                    segments.len() == 1 && first.starts_with(|c: char| c.is_ascii_uppercase());
                if module.opaque.is_empty()
                    || constant
                    || PRELUDE.contains(&first.as_str())
                    || self.generics.iter().any(|(g, _)| g == first)
                    || unit.deps.contains(first)
                    || self.program.unit_named(first).is_some()
                {
                    return None;
                }
                match self.program.resolve(self.module, &segments[..1], false) {
                    Target::External(p) if p == *first => Some(module.opaque.join(", ")),
                    _ => None,
                }
            }
            // `gen::save` where module `gen` holds item-level macros and no `save`.
            Target::Unknown => (1..segments.len()).rev().find_map(|k| {
                match self.program.resolve(self.module, &segments[..k], false) {
                    Target::Module(m) => {
                        let opaque = &self.program.modules[m].opaque;
                        Some((!opaque.is_empty()).then(|| opaque.join(", ")))
                    }
                    _ => None,
                }
            })?,
            _ => None,
        }
    }
}

/// What a value of type `ty`, as written in `module`, is: through references, `Result`,
/// `Option`, `Cow` and smart pointers to the type that carries the methods. A generic
/// parameter or a trait object is unknown here.
fn returned(
    program: &Program,
    ty: &syn::Type,
    module: ModId,
    self_ty: Option<&str>,
    generics: &[(String, Vec<String>)],
) -> Named<NodeId, TypeId> {
    match ty {
        syn::Type::Reference(r) => returned(program, &r.elem, module, self_ty, generics),
        syn::Type::Paren(p) => returned(program, &p.elem, module, self_ty, generics),
        syn::Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return Named::Unknown;
            };
            if p.path.is_ident("Self") {
                let unit = program.modules[module].unit;
                return match self_ty {
                    Some(t) => Named::Type((unit, t.to_string())),
                    None => Named::Unknown,
                };
            }
            if let Some(ident) = p.path.get_ident() {
                if generics.iter().any(|(g, _)| ident == g) {
                    return Named::Unknown;
                }
            }
            let wrapper = ["Result", "Option", "Box", "Arc", "Rc", "Cow"]
                .contains(&last.ident.to_string().as_str());
            if wrapper {
                if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                    if let Some(syn::GenericArgument::Type(inner)) = a.args.first() {
                        return returned(program, inner, module, self_ty, generics);
                    }
                }
            }
            let segs = segment_names(&p.path);
            match named(program.resolve(module, &segs, p.path.leading_colon.is_some())) {
                found @ (Named::Type(_) | Named::External(_)) => found,
                _ => Named::Unknown,
            }
        }
        _ => Named::Unknown,
    }
}

/// The sites of node `id`.
pub(crate) fn sites(program: &Program, id: NodeId) -> Vec<Site<NodeId>> {
    let node = &program.nodes[id];
    let mut names = NodeNames {
        program,
        module: node.module,
        self_ty: None,
        generics: &[],
        dyn_params: &[],
        ret: None,
    };
    match &node.kind {
        NodeKind::Fn {
            block,
            self_ty,
            params,
            rewritten_by,
            generics,
            dyn_params,
            ret,
            ..
        } => {
            names.ret = ret.as_deref();
            names.self_ty = self_ty.as_deref();
            names.generics = generics;
            names.dyn_params = dyn_params;
            let mut sites = fn_sites(&names, params, block, Limits::WORKSPACE);
            if let Some((attr, span)) = rewritten_by {
                // The code analysed may not be the code that runs.
                sites.insert(
                    0,
                    Site {
                        kind: SiteKind::Uses(Use {
                            call: format!("{attr} (an attribute macro may rewrite the item)"),
                            effect: Effect::Unanalysable,
                            literal: None,
                        }),
                        span: *span,
                        range: (*span, *span),
                        len: attr.len(),
                    },
                );
            }
            sites
        }
        NodeKind::Macro { bodies } => macro_sites(&names, bodies, Limits::WORKSPACE),
    }
}

/// The 1-based line and column where a site starts.
pub(crate) fn position<N>(site: &Site<N>) -> (usize, usize) {
    let start = site.span.start();
    (start.line, start.column + 1)
}
