//! How names resolve outside the body being walked: the one thing the two tiers see
//! differently, and so the one thing the [walker](super::walk) is generic over.
//!
//! The walker itself resolves what the body declares (its `use` declarations, local bindings,
//! items and `extern` blocks, `Self`); a path that leaves the body is handed to a [`Names`]:
//!
//! * tier 1, the `#[tool]` attribute, sees the body alone: [`BodyOnly`] knows absolute paths
//!   and the crates the catalog names (`std`, `tokio`, `libc`, ...), and nothing else, because a
//!   guess about a module-level import would turn a user's own `fs::write` into a build error;
//! * tier 2, `toolpolicy-lint`, sees the crate and its workspace: its [`Names`] follows module
//!   `use` declarations, globs and re-exports to the functions, methods, types and
//!   `macro_rules!` macros of the analysed code, which become edges of its call graph.

use std::convert::Infallible;

/// What a path names, as far as a [`Names`] can tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Named<N, T> {
    /// Functions, methods or macros of the analysed code (edges of tier 2's call graph).
    Nodes(Vec<N>),
    /// A type of the analysed code.
    Type(T),
    /// A path outside the analysed code, fully qualified as far as known (`std::fs::write`),
    /// for the [catalog](super::capability).
    External(String),
    /// Code the lint cannot see, described: a function declared in an `extern` block, or (in
    /// tier 2) a name only an item-level macro can define. Unanalysable.
    Foreign(String),
    /// A module, or nothing known: not followed.
    Unknown,
}

/// Name resolution beyond the body: see the [module documentation](self).
///
/// Only [`Names::resolve`] is required; a resolver that knows no code of its own (tier 1)
/// keeps the defaults, which know nothing.
pub trait Names {
    /// A function, method or macro of the analysed code.
    type Node: Clone;
    /// A type of the analysed code.
    type Type: Clone;

    /// What `segments` (`["std", "fs", "write"]`) names as written in the body's module, after
    /// the body's own declarations were consulted; `absolute` for a leading `::`.
    fn resolve(&self, segments: &[String], absolute: bool) -> Named<Self::Node, Self::Type>;

    /// The type `Self` stands for in the body (an `impl` block's type).
    fn self_type(&self) -> Option<Self::Type> {
        None
    }

    /// The associated functions and methods called `name` of `ty`.
    fn associated(&self, ty: &Self::Type, name: &str) -> Option<&[Self::Node]> {
        let _ = (ty, name);
        None
    }

    /// Every method called `name` (taking `self`) of the analysed code: where a call on a
    /// receiver of unknown type may go.
    fn methods_named(&self, name: &str) -> Option<&[Self::Node]> {
        let _ = name;
        None
    }

    /// What a call to any of `nodes` returns, by their declared return type (through
    /// references, `Result`, `Option` and smart pointers): a type of the analysed code, an
    /// external type, or [`Named::Unknown`] when they disagree or do not say.
    fn returns(&self, nodes: &[Self::Node]) -> Named<Self::Node, Self::Type> {
        let _ = nodes;
        Named::Unknown
    }

    /// Parameters of the walked function whose value is reached through traits (`&dyn T`,
    /// `Box<dyn T>`, `impl T`, a generic `S: T`), with the traits' names.
    fn trait_params(&self) -> &[(String, Vec<String>)] {
        &[]
    }

    /// The traits through which field `field` of `ty` is reached (`Box<dyn T>`, `S: T`).
    fn field_traits(&self, ty: &Self::Type, field: &str) -> Option<Vec<String>> {
        let _ = (ty, field);
        None
    }

    /// The functions called `name` of every impl of `traits` in the analysed code, and the
    /// traits' own default bodies: what a call through `dyn T` or `S: T` may run.
    fn trait_methods(&self, traits: &[String], name: &str) -> Vec<Self::Node> {
        let _ = (traits, name);
        Vec::new()
    }

    /// Whether the analysed code declares a trait called `name`.
    fn declares_trait(&self, name: &str) -> bool {
        let _ = name;
        false
    }

    /// The `drop` of `ty` when it has an `impl Drop`: building a value of it runs that at
    /// the end of its scope (or at once, for a temporary).
    fn drop_of(&self, ty: &Self::Type) -> Option<&[Self::Node]> {
        let _ = ty;
        None
    }

    /// The error type the walked function declares (`E` of `-> Result<T, E>`): `?` converts
    /// into it with `From`.
    fn error_type(&self) -> Named<Self::Node, Self::Type> {
        Named::Unknown
    }

    /// What `ty` derefs to, when it has an `impl Deref` (a newtype over `PathBuf`).
    fn deref_target(&self, ty: &Self::Type) -> Named<Self::Node, Self::Type> {
        let _ = ty;
        Named::Unknown
    }

    /// What the type of field `field` of `ty` names.
    fn field(&self, ty: &Self::Type, field: &str) -> Named<Self::Node, Self::Type> {
        let _ = (ty, field);
        Named::Unknown
    }

    /// The `macro_rules!` macros called `name` of the analysed code.
    fn macro_named(&self, name: &str) -> Option<&[Self::Node]> {
        let _ = name;
        None
    }
}

/// Crates whose paths tier 1 takes as absolute when they start a path: the crates the catalog
/// describes. A user crate or module of the same name is possible but rare; the attribute cannot
/// tell, and these names are what the README promises the build catches.
pub const EXTERNAL_ROOTS: &[&str] = &[
    "std",
    "core",
    "alloc",
    "tokio",
    "reqwest",
    "ureq",
    "hyper",
    "hyper_util",
    "libc",
    "libloading",
    "nix",
    "rusqlite",
];

/// Tier 1's resolution: the body alone. Absolute paths and paths starting with one of
/// [`EXTERNAL_ROOTS`] are external; anything else (a module-level import, `crate::` helpers) is
/// unknown and left to tier 2.
///
/// ```
/// use policy_analysis::lint::names::{BodyOnly, Named, Names};
///
/// let path = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
/// assert_eq!(BodyOnly.resolve(&path("std::fs::write"), false), Named::External("std::fs::write".into()));
/// assert_eq!(BodyOnly.resolve(&path("fs::write"), false), Named::Unknown);
/// assert_eq!(BodyOnly.resolve(&path("my_crate::x"), true), Named::External("my_crate::x".into()));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct BodyOnly;

impl Names for BodyOnly {
    type Node = Infallible;
    type Type = Infallible;

    fn resolve(&self, segments: &[String], absolute: bool) -> Named<Infallible, Infallible> {
        match segments.first() {
            Some(first) if absolute || EXTERNAL_ROOTS.contains(&first.as_str()) => {
                Named::External(segments.join("::"))
            }
            _ => Named::Unknown,
        }
    }
}
