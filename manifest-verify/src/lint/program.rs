//! The loaded program: source files, module trees (following `mod` declarations and
//! `#[path]`), and the nodes of the call graph (functions, methods, `macro_rules!` macros) with
//! the names each module defines.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use policy_analysis::lint::scope::{bound_trait_names, type_path, Params};
use proc_macro2::TokenStream;

use syn::ext::IdentExt;

use super::load;
use super::toolattr::{self, ToolDecl};
use super::workspace::CrateSource;
use super::LintError;

/// Index of a [`SourceFile`].
pub(crate) type FileId = usize;
/// Index of a [`Module`].
pub(crate) type ModId = usize;
/// Index of a [`Node`].
pub(crate) type NodeId = usize;

/// One source file, with its text for diagnostics.
pub(crate) struct SourceFile {
    /// Path shown in reports (relative to the analysed directory when possible).
    pub(crate) display: String,
    pub(crate) text: String,
}

/// One crate root's module tree entry.
pub(crate) struct Unit {
    pub(crate) name: String,
    pub(crate) root: ModId,
    pub(crate) member: bool,
    /// The names of its dependencies, as code writes them.
    pub(crate) deps: Vec<String>,
}

/// What a name defined in a module stands for.
#[derive(Clone, Debug)]
pub(crate) enum Def {
    Node(NodeId),
    Mod(ModId),
    Type(String),
    Use(UsePath),
    Foreign(String),
}

/// The target of a `use`, resolved lazily from the module that declares it.
#[derive(Clone, Debug)]
pub(crate) struct UsePath {
    pub(crate) segs: Vec<String>,
    pub(crate) absolute: bool,
    pub(crate) from: ModId,
}

/// One module and the names it defines.
pub(crate) struct Module {
    pub(crate) unit: usize,
    pub(crate) parent: Option<ModId>,
    pub(crate) path: Vec<String>,
    pub(crate) defs: HashMap<String, Vec<Def>>,
    pub(crate) globs: Vec<UsePath>,
    /// Item-level macro invocations (`include!`, `cfg_if!`, any `m! { .. }` other than
    /// `macro_rules!`): the items they define are not analysed. Described as "m! at file:line".
    pub(crate) opaque: Vec<String>,
}

/// What a node of the call graph is.
pub(crate) enum NodeKind {
    Fn {
        block: Box<syn::Block>,
        self_ty: Option<String>,
        /// Its parameters: locals of the body, and typed receivers (`p: &Path` gives
        /// `p.exists()` a receiver type).
        params: Params,
        /// Parameters whose value is reached through traits (`&dyn T`, `Box<dyn T>`,
        /// `impl T`, a generic `S: T`), with the traits' names.
        dyn_params: Vec<(String, Vec<String>)>,
        /// Generic parameters of the function and its impl, with their trait bounds' names.
        generics: Vec<(String, Vec<String>)>,
        /// The declared return type.
        ret: Option<Box<syn::Type>>,
        /// An attribute macro on the item (or its impl block) that may rewrite it: the code
        /// analysed may not be the code that runs: the attribute as written, and where it is.
        rewritten_by: Option<(String, proc_macro2::Span)>,
    },
    Macro {
        bodies: Vec<TokenStream>,
    },
}

/// A function, method or macro of the analysed code.
pub(crate) struct Node {
    pub(crate) kind: NodeKind,
    pub(crate) module: ModId,
    pub(crate) display: String,
    pub(crate) file: FileId,
    pub(crate) tool: Option<ToolDecl>,
}

/// Everything loaded.
#[derive(Default)]
pub(crate) struct Program {
    pub(crate) files: Vec<SourceFile>,
    pub(crate) units: Vec<Unit>,
    pub(crate) modules: Vec<Module>,
    pub(crate) nodes: Vec<Node>,
    /// `macro_rules!` macros by name, across all crates (textual scope is not modelled).
    pub(crate) macros: HashMap<String, Vec<NodeId>>,
    /// Methods that take `self`, by name, for calls whose receiver type is unknown.
    pub(crate) methods: HashMap<String, Vec<NodeId>>,
    /// Associated functions and methods by `(unit, type name)`, then by name.
    pub(crate) assoc: HashMap<(usize, String), HashMap<String, Vec<NodeId>>>,
    /// Named fields of structs by `(unit, type name)`: the field's type path and the module
    /// to resolve it in.
    pub(crate) fields: HashMap<(usize, String), HashMap<String, (ModId, syn::Path)>>,
    /// Named fields reached through traits (`Box<dyn T>`, a generic `S: T`), with the traits.
    pub(crate) trait_fields: HashMap<(usize, String), HashMap<String, Vec<String>>>,
    /// The names of the traits the analysed code defines.
    pub(crate) traits: HashSet<String>,
    /// `impl Trait for Type`: the implementing types, by the trait's name.
    pub(crate) trait_impls: HashMap<String, Vec<(usize, String)>>,
    /// Types with an `impl Drop`: a value built runs its `drop` when it goes out of scope.
    pub(crate) drops: HashSet<(usize, String)>,
    /// `impl Deref for Type { type Target = T; }`: the target's path and its module.
    pub(crate) derefs: HashMap<(usize, String), (ModId, syn::Path)>,
    /// `type Alias = Target;`: `(unit, alias, target's name)`.
    aliases: Vec<(usize, String, String)>,
    /// Problems met while loading (unreadable module files, policies that do not parse).
    pub(crate) problems: Vec<LintError>,
    base: PathBuf,
    /// The files whose items are being registered, outermost first (canonical paths): a `mod`
    /// naming one of them is a cycle.
    loading: Vec<PathBuf>,
    /// Bytes read so far, against [`MAX_TOTAL_BYTES`].
    total_bytes: u64,
    /// Name lookups already made.
    pub(crate) resolution: super::resolve::Resolution,
}

/// The most modules one run loads: a tree of `#[path]` modules naming the same files can
/// otherwise grow exponentially.
pub(crate) const MAX_MODULES: usize = 50_000;

/// The most source one run reads, all files together (64 MiB).
pub(crate) const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;

impl Program {
    /// Loads every crate, following `mod` declarations from each root.
    pub(crate) fn load(base: &Path, crates: &[CrateSource]) -> Result<Program, LintError> {
        let mut program = Program {
            base: base.canonicalize().unwrap_or_else(|_| base.to_path_buf()),
            ..Program::default()
        };
        for krate in crates {
            for root in &krate.roots {
                let unit = program.units.len();
                let module = program.new_module(unit, None, vec![krate.name.clone()]);
                program.units.push(Unit {
                    name: krate.name.clone(),
                    root: module,
                    member: krate.member,
                    deps: krate.deps.clone(),
                });
                let dir = root.parent().unwrap_or(Path::new(".")).to_path_buf();
                match program.load_file(root) {
                    Ok((file, items)) => program.file_items(module, file, root, items, &dir, &dir),
                    Err(e) => program.problems.push(e),
                }
            }
        }
        program.merge_aliases();
        Ok(program)
    }

    /// Makes the associated functions of a type and of its aliases (`type B = A; type A =
    /// Disk;`, with impls on any of them) one set, found under every one of the names.
    fn merge_aliases(&mut self) {
        let target: HashMap<(usize, String), String> = self
            .aliases
            .iter()
            .map(|(u, a, t)| ((*u, a.clone()), t.clone()))
            .collect();
        let last = |unit: usize, name: &str| {
            let mut name = name.to_string();
            // Bounded: an alias cycle does not compile, but the lint reads any input.
            for _ in 0..16 {
                match target.get(&(unit, name.clone())) {
                    Some(t) if *t != name => name = t.clone(),
                    _ => break,
                }
            }
            name
        };
        let mut groups: HashMap<(usize, String), Vec<String>> = HashMap::new();
        for (unit, alias, _) in &self.aliases {
            groups
                .entry((*unit, last(*unit, alias)))
                .or_default()
                .push(alias.clone());
        }
        for ((unit, canonical), aliases) in groups {
            let mut merged = self
                .assoc
                .get(&(unit, canonical.clone()))
                .cloned()
                .unwrap_or_default();
            for alias in &aliases {
                for (name, nodes) in self.assoc.get(&(unit, alias.clone())).into_iter().flatten() {
                    merged
                        .entry(name.clone())
                        .or_default()
                        .extend(nodes.iter().copied());
                }
                if self.drops.contains(&(unit, alias.clone())) {
                    self.drops.insert((unit, canonical.clone()));
                }
            }
            for name in aliases.iter().chain([&canonical]) {
                self.assoc.insert((unit, name.clone()), merged.clone());
                if self.drops.contains(&(unit, canonical.clone())) {
                    self.drops.insert((unit, name.clone()));
                }
            }
        }
    }

    /// Reads and parses one file.
    fn load_file(&mut self, path: &Path) -> Result<(FileId, Vec<syn::Item>), LintError> {
        let file = self.read(path)?;
        let items = load::parse(&self.files[file].text, path)?;
        Ok((file, items))
    }

    /// Registers the items of a whole file, refusing one that is already being read further
    /// up the module tree.
    fn file_items(
        &mut self,
        module: ModId,
        file: FileId,
        path: &Path,
        items: Vec<syn::Item>,
        dir: &Path,
        path_base: &Path,
    ) {
        let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        self.loading.push(canonical);
        self.items(module, file, items, dir, path_base);
        self.loading.pop();
    }

    pub(crate) fn unit_named(&self, name: &str) -> Option<&Unit> {
        self.units.iter().find(|u| u.name == name)
    }

    fn read(&mut self, path: &Path) -> Result<FileId, LintError> {
        let text = load::read(path)?;
        self.total_bytes += text.len() as u64;
        if self.total_bytes > MAX_TOTAL_BYTES {
            return Err(LintError::TooMuchCode {
                path: path.to_path_buf(),
                limit: MAX_TOTAL_BYTES,
            });
        }
        let abs = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let display = abs
            .strip_prefix(&self.base)
            .unwrap_or(&abs)
            .display()
            .to_string();
        self.files.push(SourceFile { display, text });
        Ok(self.files.len() - 1)
    }

    fn new_module(&mut self, unit: usize, parent: Option<ModId>, path: Vec<String>) -> ModId {
        self.modules.push(Module {
            unit,
            parent,
            path,
            defs: HashMap::new(),
            globs: Vec::new(),
            opaque: Vec::new(),
        });
        self.modules.len() - 1
    }

    fn define(&mut self, module: ModId, name: String, def: Def) {
        self.modules[module].defs.entry(name).or_default().push(def);
    }

    /// Registers the items of `module`; `dir` is where its `mod x;` children live and
    /// `path_base` what their `#[path]` is relative to (the file's own directory at the top of
    /// a file, `dir` inside an inline module).
    fn items(
        &mut self,
        module: ModId,
        file: FileId,
        items: Vec<syn::Item>,
        dir: &Path,
        path_base: &Path,
    ) {
        // Taken by value: function bodies move into their nodes instead of being copied.
        for item in items {
            match item {
                syn::Item::Fn(f) => {
                    let node = self.fn_node(
                        module,
                        file,
                        &f.sig,
                        *f.block,
                        None,
                        &f.attrs,
                        &Outer::default(),
                    );
                    self.define(module, f.sig.ident.to_string(), Def::Node(node));
                }
                syn::Item::Mod(m) => {
                    if is_cfg_test(&m.attrs) {
                        continue;
                    }
                    self.child_module(module, file, m, dir, path_base);
                }
                syn::Item::Use(u) => self.use_tree(module, &[], u.leading_colon.is_some(), &u.tree),
                syn::Item::Struct(s) => {
                    let name = s.ident.to_string();
                    self.define(module, name.clone(), Def::Type(name.clone()));
                    let unit = self.modules[module].unit;
                    let generics = generic_bounds(&s.generics);
                    for field in &s.fields {
                        if let Some(ident) = &field.ident {
                            let traits = traits_of(&field.ty, &generics);
                            if !traits.is_empty() {
                                self.trait_fields
                                    .entry((unit, name.clone()))
                                    .or_default()
                                    .insert(ident.to_string(), traits);
                            }
                        }
                        if let (Some(ident), Some(ty)) = (&field.ident, type_path(&field.ty)) {
                            self.fields
                                .entry((unit, name.clone()))
                                .or_default()
                                .insert(ident.to_string(), (module, ty.clone()));
                        }
                    }
                }
                syn::Item::Enum(e) => {
                    self.define(module, e.ident.to_string(), Def::Type(e.ident.to_string()))
                }
                syn::Item::Union(u) => {
                    self.define(module, u.ident.to_string(), Def::Type(u.ident.to_string()))
                }
                syn::Item::Trait(t) => {
                    let name = t.ident.to_string();
                    self.traits.insert(name.clone());
                    self.define(module, name.clone(), Def::Type(name.clone()));
                    let outer = Outer {
                        generics: generic_bounds(&t.generics),
                        attrs: Vec::new(),
                    };
                    for ti in t.items {
                        if let syn::TraitItem::Fn(f) = ti {
                            if let Some(block) = f.default {
                                self.method(module, file, &name, &f.sig, block, &f.attrs, &outer);
                            }
                        }
                    }
                }
                syn::Item::Type(t) => {
                    // `type Alias = Target;` resolves to the target's name for associated calls.
                    let target = match t.ty.as_ref() {
                        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
                        _ => None,
                    };
                    let unit = self.modules[module].unit;
                    if let Some(target) = &target {
                        self.aliases
                            .push((unit, t.ident.to_string(), target.clone()));
                    }
                    self.define(
                        module,
                        t.ident.to_string(),
                        Def::Type(target.unwrap_or_else(|| t.ident.to_string())),
                    );
                }
                syn::Item::Impl(i) => {
                    let Some(ty) = type_name(&i.self_ty) else {
                        continue;
                    };
                    let unit = self.modules[module].unit;
                    if let Some((_, trait_path, _)) = &i.trait_ {
                        let trait_name = trait_path
                            .segments
                            .last()
                            .map(|s| s.ident.to_string())
                            .unwrap_or_default();
                        match trait_name.as_str() {
                            "Drop" => {
                                self.drops.insert((unit, ty.clone()));
                            }
                            "Deref" => {
                                let target = i.items.iter().find_map(|ii| match ii {
                                    syn::ImplItem::Type(t) if t.ident == "Target" => {
                                        type_path(&t.ty).cloned()
                                    }
                                    _ => None,
                                });
                                if let Some(target) = target {
                                    self.derefs.insert((unit, ty.clone()), (module, target));
                                }
                            }
                            _ => {}
                        }
                        self.trait_impls
                            .entry(trait_name)
                            .or_default()
                            .push((unit, ty.clone()));
                    }
                    let outer = Outer {
                        generics: generic_bounds(&i.generics),
                        attrs: i.attrs.clone(),
                    };
                    for ii in i.items {
                        if let syn::ImplItem::Fn(f) = ii {
                            self.method(module, file, &ty, &f.sig, f.block, &f.attrs, &outer);
                        }
                    }
                }
                syn::Item::ForeignMod(f) => {
                    for fi in &f.items {
                        if let syn::ForeignItem::Fn(ff) = fi {
                            let name = ff.sig.ident.to_string();
                            self.define(module, name.clone(), Def::Foreign(name));
                        }
                    }
                }
                syn::Item::Macro(m) if m.mac.path.is_ident("macro_rules") => {
                    let Some(ident) = &m.ident else { continue };
                    let bodies = macro_bodies(m.mac.tokens.clone());
                    let node = self.push_node(Node {
                        kind: NodeKind::Macro { bodies },
                        module,
                        display: format!("{ident}!"),
                        file,
                        tool: None,
                    });
                    self.macros.entry(ident.to_string()).or_default().push(node);
                }
                syn::Item::Macro(m) => {
                    let name = m
                        .mac
                        .path
                        .segments
                        .last()
                        .map(|s| s.ident.to_string())
                        .unwrap_or_default();
                    let line = m
                        .mac
                        .path
                        .segments
                        .first()
                        .map_or(0, |s| s.ident.span().start().line);
                    let at = format!("{name}! at {}:{line}", self.files[file].display);
                    self.modules[module].opaque.push(at);
                }
                _ => {}
            }
        }
    }

    fn child_module(
        &mut self,
        parent: ModId,
        file: FileId,
        m: syn::ItemMod,
        dir: &Path,
        path_base: &Path,
    ) {
        let name = m.ident.to_string();
        // `mod r#ref;` lives in `ref.rs`.
        let file_name = m.ident.unraw().to_string();
        let mut path = self.modules[parent].path.clone();
        path.push(file_name.clone());
        if self.modules.len() >= MAX_MODULES {
            self.problems.push(LintError::TooManyModules {
                module: path.join("::"),
                limit: MAX_MODULES,
            });
            return;
        }
        let unit = self.modules[parent].unit;
        let child = self.new_module(unit, Some(parent), path);
        self.define(parent, name, Def::Mod(child));
        let explicit_all = path_attrs(&m.attrs);
        let explicit = explicit_all
            .iter()
            .find(|p| m.content.is_some() || path_base.join(p).exists())
            .or(explicit_all.first())
            .cloned();
        match m.content {
            Some((_, items)) => {
                let child_dir = match &explicit {
                    Some(p) => path_base.join(p),
                    None => dir.join(&file_name),
                };
                self.items(child, file, items, &child_dir, &child_dir);
            }
            None => {
                let candidates = match &explicit {
                    Some(p) => vec![path_base.join(p)],
                    None => vec![
                        dir.join(format!("{file_name}.rs")),
                        dir.join(&file_name).join("mod.rs"),
                    ],
                };
                let Some(found) = candidates.iter().find(|p| p.exists()) else {
                    self.problems.push(LintError::MissingModule {
                        module: self.modules[child].path.join("::"),
                        tried: candidates,
                    });
                    return;
                };
                let canonical = found.canonicalize().unwrap_or_else(|_| found.clone());
                if self.loading.contains(&canonical) {
                    self.problems.push(LintError::ModuleCycle {
                        module: self.modules[child].path.join("::"),
                        path: found.clone(),
                    });
                    return;
                }
                match self.load_file(found) {
                    Ok((f, items)) => {
                        // A `mod.rs` or `#[path]` file keeps its children next to it; `a.rs`
                        // keeps them in `a/`.
                        let is_mod_rs = explicit.is_some() || found.ends_with("mod.rs");
                        let child_dir = if is_mod_rs {
                            found.parent().unwrap_or(dir).to_path_buf()
                        } else {
                            dir.join(&file_name)
                        };
                        let file_dir = found.parent().unwrap_or(dir).to_path_buf();
                        self.file_items(child, f, found, items, &child_dir, &file_dir);
                    }
                    Err(e) => self.problems.push(e),
                }
            }
        }
    }

    fn use_tree(&mut self, module: ModId, prefix: &[String], absolute: bool, tree: &syn::UseTree) {
        let mk = |segs: Vec<String>| UsePath {
            segs,
            absolute,
            from: module,
        };
        match tree {
            syn::UseTree::Path(p) => {
                let mut next = prefix.to_vec();
                next.push(p.ident.to_string());
                self.use_tree(module, &next, absolute, &p.tree);
            }
            syn::UseTree::Name(n) if n.ident == "self" => {
                if let Some(last) = prefix.last() {
                    self.define(module, last.clone(), Def::Use(mk(prefix.to_vec())));
                }
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.to_vec();
                full.push(n.ident.to_string());
                self.define(module, n.ident.to_string(), Def::Use(mk(full)));
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.to_vec();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                if r.rename != "_" {
                    self.define(module, r.rename.to_string(), Def::Use(mk(full)));
                }
            }
            syn::UseTree::Glob(_) => self.modules[module].globs.push(mk(prefix.to_vec())),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(module, prefix, absolute, t);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn fn_node(
        &mut self,
        module: ModId,
        file: FileId,
        sig: &syn::Signature,
        block: syn::Block,
        self_ty: Option<&str>,
        attrs: &[syn::Attribute],
        outer: &Outer,
    ) -> NodeId {
        let mut display = self.modules[module].path[1..].join("::");
        if let Some(ty) = self_ty {
            if !display.is_empty() {
                display.push_str("::");
            }
            display.push_str(ty);
        }
        if !display.is_empty() {
            display.push_str("::");
        }
        display.push_str(&sig.ident.to_string());
        let tool = match toolattr::tool_decl(&sig.ident.to_string(), attrs) {
            Ok(t) => t,
            Err(errors) => {
                for error in errors {
                    let start = error.span().start();
                    self.problems.push(LintError::Policy {
                        file: self.files[file].display.clone(),
                        line: start.line,
                        column: start.column + 1,
                        message: format!(
                            "the policy of `{}` does not read: {error}",
                            sig.ident.to_string().trim_start_matches("r#")
                        ),
                    });
                }
                None
            }
        };
        let mut generics = outer.generics.clone();
        generics.extend(generic_bounds(&sig.generics));
        let rewritten_by = attrs
            .iter()
            .chain(&outer.attrs)
            .find(|a| !is_known_attribute(a))
            .map(|a| {
                let name = a
                    .path()
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect::<Vec<_>>()
                    .join("::");
                (format!("#[{name}]"), a.pound_token.span)
            });
        self.push_node(Node {
            kind: NodeKind::Fn {
                block: Box::new(block),
                self_ty: self_ty.map(str::to_string),
                params: Params::of(sig),
                dyn_params: dyn_params(sig, &generics),
                ret: match &sig.output {
                    syn::ReturnType::Type(_, ty) => Some(ty.clone()),
                    syn::ReturnType::Default => None,
                },
                generics,
                rewritten_by,
            },
            module,
            display,
            file,
            tool,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn method(
        &mut self,
        module: ModId,
        file: FileId,
        ty: &str,
        sig: &syn::Signature,
        block: syn::Block,
        attrs: &[syn::Attribute],
        outer: &Outer,
    ) {
        let node = self.fn_node(module, file, sig, block, Some(ty), attrs, outer);
        let unit = self.modules[module].unit;
        let name = sig.ident.to_string();
        self.assoc
            .entry((unit, ty.to_string()))
            .or_default()
            .entry(name.clone())
            .or_default()
            .push(node);
        if sig.receiver().is_some() {
            self.methods.entry(name).or_default().push(node);
        }
    }

    fn push_node(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }
}

fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => None,
    }
}

/// What an item inside an impl block or trait takes from it.
#[derive(Default)]
pub(crate) struct Outer {
    /// Generic parameters of the impl or trait, with their trait bounds' names.
    generics: Vec<(String, Vec<String>)>,
    /// The impl block's attributes.
    attrs: Vec<syn::Attribute>,
}

/// Each generic type parameter with the names of the traits that bound it, inline
/// (`<S: Sink>`) or in the where clause.
fn generic_bounds(generics: &syn::Generics) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = generics
        .type_params()
        .map(|p| (p.ident.to_string(), bound_trait_names(&p.bounds)))
        .collect();
    for predicate in generics.where_clause.iter().flat_map(|w| &w.predicates) {
        if let syn::WherePredicate::Type(t) = predicate {
            if let syn::Type::Path(p) = &t.bounded_ty {
                if let Some(ident) = p.path.get_ident() {
                    if let Some(entry) = out.iter_mut().find(|(n, _)| ident == n) {
                        entry.1.extend(bound_trait_names(&t.bounds));
                    }
                }
            }
        }
    }
    out
}

/// The traits through which a value of type `ty` is used: `dyn T`, `impl T`, a generic
/// parameter bounded by `T`, through references and `Box`/`Arc`/`Rc`.
pub(crate) fn traits_of(ty: &syn::Type, generics: &[(String, Vec<String>)]) -> Vec<String> {
    match ty {
        syn::Type::Reference(r) => traits_of(&r.elem, generics),
        syn::Type::Paren(p) => traits_of(&p.elem, generics),
        syn::Type::TraitObject(t) => bound_trait_names(&t.bounds),
        syn::Type::ImplTrait(t) => bound_trait_names(&t.bounds),
        syn::Type::Path(p) if p.qself.is_none() => {
            if let Some(ident) = p.path.get_ident() {
                return generics
                    .iter()
                    .find(|(n, _)| ident == n)
                    .map(|(_, b)| b.clone())
                    .unwrap_or_default();
            }
            let Some(last) = p.path.segments.last() else {
                return Vec::new();
            };
            let wrapper = ["Box", "Arc", "Rc"].contains(&last.ident.to_string().as_str());
            match &last.arguments {
                syn::PathArguments::AngleBracketed(a) if wrapper => a
                    .args
                    .iter()
                    .find_map(|g| match g {
                        syn::GenericArgument::Type(t) => Some(traits_of(t, generics)),
                        _ => None,
                    })
                    .unwrap_or_default(),
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

fn dyn_params(
    sig: &syn::Signature,
    generics: &[(String, Vec<String>)],
) -> Vec<(String, Vec<String>)> {
    sig.inputs
        .iter()
        .filter_map(|input| match input {
            syn::FnArg::Typed(t) => match t.pat.as_ref() {
                syn::Pat::Ident(id) => {
                    let traits = traits_of(&t.ty, generics);
                    (!traits.is_empty()).then(|| (id.ident.to_string(), traits))
                }
                _ => None,
            },
            syn::FnArg::Receiver(_) => None,
        })
        .collect()
}

/// Attributes that leave the item's code as written: built-in ones, lint tools', toolpolicy's
/// own and rmcp's, and the common wrappers that keep the body (`tracing::instrument`,
/// `async_trait`, tokio's entry points). Any other attribute macro may replace the body.
fn is_known_attribute(attr: &syn::Attribute) -> bool {
    const KNOWN: &[&str] = &[
        "inline",
        "cold",
        "must_use",
        "allow",
        "warn",
        "deny",
        "forbid",
        "expect",
        "doc",
        "cfg",
        "cfg_attr",
        "track_caller",
        "deprecated",
        "no_mangle",
        "export_name",
        "link_section",
        "target_feature",
        "test",
        "ignore",
        "should_panic",
        "automatically_derived",
        "non_exhaustive",
        "instruction_set",
        "coverage",
        "optimize",
        "unsafe",
        "tool",
        "tool_policy",
        "toolset",
        "tool_router",
        "tool_handler",
        "prompt",
        "prompt_router",
        "instrument",
        "async_trait",
        "main",
        "bench",
    ];
    let path = attr.path();
    let first = path
        .segments
        .first()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    if ["rustfmt", "clippy", "rustdoc", "diagnostic"].contains(&first.as_str()) {
        return true;
    }
    path.segments
        .last()
        .is_some_and(|s| KNOWN.contains(&s.ident.to_string().as_str()))
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

/// `#[path = "x"]`, or the paths of `#[cfg_attr(cond, path = "x")]` in order: cfgs are not
/// evaluated, so the first of these whose file exists is taken (one branch of the code).
fn path_attrs(attrs: &[syn::Attribute]) -> Vec<String> {
    let lit = |expr: &syn::Expr| match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        _ => None,
    };
    let mut out = Vec::new();
    for a in attrs {
        match &a.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("path") => out.extend(lit(&nv.value)),
            syn::Meta::List(l) if l.path.is_ident("cfg_attr") => {
                let parsed = l.parse_args_with(
                    syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
                );
                for meta in parsed.into_iter().flatten().skip(1) {
                    if let syn::Meta::NameValue(nv) = meta {
                        if nv.path.is_ident("path") {
                            out.extend(lit(&nv.value));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The transcriber of every rule of a `macro_rules!` (`(matcher) => { transcriber };`).
fn macro_bodies(tokens: TokenStream) -> Vec<TokenStream> {
    let mut bodies = Vec::new();
    let mut after_arrow = false;
    let mut prev_eq = false;
    for tt in tokens {
        match &tt {
            proc_macro2::TokenTree::Punct(p) if p.as_char() == '=' => prev_eq = true,
            proc_macro2::TokenTree::Punct(p) if p.as_char() == '>' && prev_eq => {
                after_arrow = true;
                prev_eq = false;
            }
            proc_macro2::TokenTree::Group(g) if after_arrow => {
                bodies.push(g.stream());
                after_arrow = false;
            }
            _ => prev_eq = false,
        }
    }
    bodies
}
