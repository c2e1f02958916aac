//! What one function or macro body does, by the engine's walker
//! ([`policy_analysis::lint::walk`]) with tier 2's name resolution: the crate and workspace
//! loaded in [`Program`], so that paths, methods, fields and macros lead to the functions of the
//! analysed code (the edges of the call graph).

use policy_analysis::lint::capability::Effect;
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
        named(self.program.resolve(self.module, segments, absolute))
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

/// The sites of node `id`.
pub(crate) fn sites(program: &Program, id: NodeId) -> Vec<Site<NodeId>> {
    let node = &program.nodes[id];
    let mut names = NodeNames {
        program,
        module: node.module,
        self_ty: None,
    };
    match &node.kind {
        NodeKind::Fn {
            block,
            self_ty,
            params,
            rewritten_by,
            ..
        } => {
            names.self_ty = self_ty.as_deref();
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
