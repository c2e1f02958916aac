//! The loaded program: source files, module trees (following `mod` declarations and
//! `#[path]`), and the nodes of the call graph (functions, methods, `macro_rules!` macros) with
//! the names each module defines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use policy_analysis::lint::scope::{type_path, Params};
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
}

/// What a node of the call graph is.
pub(crate) enum NodeKind {
    Fn {
        block: Box<syn::Block>,
        self_ty: Option<String>,
        /// Its parameters: locals of the body, and typed receivers (`p: &Path` gives
        /// `p.exists()` a receiver type).
        params: Params,
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
                });
                let dir = root.parent().unwrap_or(Path::new(".")).to_path_buf();
                match program.load_file(root) {
                    Ok((file, items)) => program.file_items(module, file, root, items, &dir, &dir),
                    Err(e) => program.problems.push(e),
                }
            }
        }
        Ok(program)
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
                    let node = self.fn_node(module, file, &f.sig, *f.block, None, &f.attrs);
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
                    for field in &s.fields {
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
                    self.define(module, name.clone(), Def::Type(name.clone()));
                    for ti in t.items {
                        if let syn::TraitItem::Fn(f) = ti {
                            if let Some(block) = f.default {
                                self.method(module, file, &name, &f.sig, block, &f.attrs);
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
                    for ii in i.items {
                        if let syn::ImplItem::Fn(f) = ii {
                            self.method(module, file, &ty, &f.sig, f.block, &f.attrs);
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
        self.push_node(Node {
            kind: NodeKind::Fn {
                block: Box::new(block),
                self_ty: self_ty.map(str::to_string),
                params: Params::of(sig),
            },
            module,
            display,
            file,
            tool,
        })
    }

    fn method(
        &mut self,
        module: ModId,
        file: FileId,
        ty: &str,
        sig: &syn::Signature,
        block: syn::Block,
        attrs: &[syn::Attribute],
    ) {
        let node = self.fn_node(module, file, sig, block, Some(ty), attrs);
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
