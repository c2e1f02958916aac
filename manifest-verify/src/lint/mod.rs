//! Tier 2 of the capability lint: every annotated tool of a crate or workspace, checked across
//! modules, helper functions, `macro_rules!` macros and the workspace's own path dependencies.
//!
//! The attribute (tier 1) sees only the tool body. This analysis reads the source of the whole
//! crate with `syn` and adds what the body alone cannot show:
//!
//! * **name resolution**: the module tree from `lib.rs`/`main.rs` through `mod` declarations
//!   (including `#[path]`), module-level `use` aliases, glob imports, re-exports and `pub use`
//!   chains, `crate`/`self`/`super`, and other crates of the workspace by name;
//! * **a call graph** through the crate's own functions and methods, so a capability used in a
//!   helper three modules away is reported with the call path as the explanation;
//! * **`macro_rules!`** macros defined in the analysed code: their transcribers are scanned
//!   conservatively, token by token, in the defining module;
//! * **path dependencies**: crates reached through `path = ...` in `Cargo.toml` are loaded and
//!   their functions join the graph;
//! * **types of values**: parameters, `let` annotations, struct fields and the declared return
//!   types of functions and methods, so that `table().lookup(k)` reaches the `lookup` of the
//!   type `table` returns and no other; catalogued types carry through builders and
//!   `Path::join`, and through `Deref` newtypes;
//! * **calls through traits**: a receiver typed `Box<dyn T>`, `&dyn T`, `impl T` or a generic
//!   `S: T` reaches the method of every impl of `T` in the analysed code;
//! * **implicit calls**: building a value of a type with `impl Drop` reaches its `drop`; `for`
//!   reaches `into_iter`/`next`; `let c: Cfg = x.into()` (`try_into`) reaches `Cfg`'s `from`
//!   (`try_from`); `?` reaches the `from` of the function's declared error type.
//!
//! Code the lint cannot see is reported as unanalysable, never passed: an attribute macro on a
//! function or its impl block (other than built-in and well-known attributes that keep the
//! body), and a call that only an item-level macro of its module (`include!`, `cfg_if!`, a
//! macro generating a `mod`) can define.
//!
//! The bodies are walked by the lint engine shared with tier 1 ([`policy_analysis::lint`]): the
//! same walker ([`policy_analysis::lint::walk`]) with this crate's name resolution (the loaded
//! `program` and its resolution in `resolve`, plugged in by `body`), the same catalog, the same verdict
//! ([`policy_analysis::lint::findings::judge`]) and the same [`Finding`] type; only the call
//! graph (`analysis`) and the loading are tier 2's own. Each tool's policy is read from its
//! `#[tool(policy(...))]` or `#[tool_policy(...)]` attribute, or from a manifest given with
//! [`Options::manifest`] (matched by tool name).
//!
//! Why the attribute and not the committed manifest: the attribute sits next to the code it
//! describes, needs no build to be current, and exists for every tool, while a manifest is
//! only as fresh as its last regeneration. [`Options::manifest`] still lets CI check the code
//! against the manifest it reviews. Crates named in [`Options::trusted`] (infrastructure such
//! as the sandbox runner) are not followed.
//!
//! Code that cannot be analysed (`libc::syscall`, `asm!`, calls to `extern` functions,
//! `libloading`) is a finding of its own, [`Rule::Unanalysable`] (`lint.unanalysable`), unless the tool
//! grants every capability.
//!
//! ```no_run
//! use manifest_verify::lint::{lint, Options};
//!
//! let report = lint(std::path::Path::new("."), &Options::default())?;
//! for finding in &report.findings {
//!     println!("{}:{}: {}", finding.at.file, finding.at.line, finding.message);
//! }
//! std::process::exit(if report.violated() { 1 } else { 0 });
//! # Ok::<(), manifest_verify::lint::LintError>(())
//! ```

mod analysis;
mod as_test;
mod body;
mod load;
mod nesting;
mod program;
pub mod render;
mod resolve;
mod toolattr;
pub mod workspace;

use std::path::{Path, PathBuf};

pub use as_test::{lint_crate, LintFailure};
pub use load::MAX_FILE_BYTES;

/// The tool the lint reads from a function's attributes (`#[tool(policy(...))]` or
/// `#[tool_policy(...)]`): its name and its policy, read by [`policy_analysis::dsl`] exactly as
/// the attribute macro reads it. `Ok(None)` when no attribute declares a tool; `Err` holds
/// every mistake, each spanned where it is written.
///
/// ```
/// use policy_runtime::policy::NetPolicy;
///
/// let f: syn::ItemFn = syn::parse_quote!(#[tool(policy(net = deny))] fn fetch() {});
/// let (name, policy) = manifest_verify::lint::tool_of_attributes("fetch", &f.attrs)?.unwrap();
/// assert_eq!(name, "fetch");
/// assert_eq!(policy.net, Some(NetPolicy::Deny));
/// # Ok::<(), syn::Error>(())
/// ```
pub fn tool_of_attributes(
    fn_name: &str,
    attrs: &[syn::Attribute],
) -> Result<Option<(String, policy_runtime::ToolPolicy)>, syn::Error> {
    Ok(toolattr::tool_decl(fn_name, attrs)?.map(|t| (t.name, t.policy)))
}
use policy_runtime::Manifest;

/// Why the lint could not run, or could not see all of the code.
#[derive(Debug, thiserror::Error)]
pub enum LintError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}", path = .0.display(), source = .1)]
    Io(PathBuf, std::io::Error),
    /// A `Cargo.toml` is not valid TOML.
    #[error("invalid {path}: {message}", path = .0.display(), message = .1)]
    Manifest(PathBuf, String),
    /// A source file does not parse.
    #[error("{}:{line}:{column}: cannot parse: {message}", file.display())]
    Parse {
        /// The file.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A `mod x;` whose file does not exist.
    #[error("module `{module}` has no file; tried {}", tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    MissingModule {
        /// The module's path.
        module: String,
        /// The files looked for.
        tried: Vec<PathBuf>,
    },
    /// A tool attribute whose policy does not read.
    #[error("{file}:{line}:{column}: {message}")]
    Policy {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A module path names something other than a regular file (a FIFO, a device, a
    /// directory): not read, since it may never end.
    #[error("unanalysable: {path} is not a regular file", path = .0.display())]
    NotAFile(PathBuf),
    /// A source file larger than the lint reads.
    #[error("unanalysable: {path} is larger than {limit} bytes", path = path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, [`MAX_FILE_BYTES`].
        limit: u64,
    },
    /// The analysed code as a whole is larger than the lint reads.
    #[error("unanalysable: {path} and the rest: the analysed code exceeds {limit} bytes in total", path = path.display())]
    TooMuchCode {
        /// The first file past the limit.
        path: PathBuf,
        /// The limit.
        limit: u64,
    },
    /// A source file nested more deeply than the lint parses.
    #[error(
        "{}:{line}: unanalysable: nested more than {limit} levels deep (blocks, brackets, \
         generic types or operator chains)",
        file.display()
    )]
    TooDeep {
        /// The file.
        file: PathBuf,
        /// 1-based line where the deepest nesting starts.
        line: usize,
        /// The limit.
        limit: usize,
    },
    /// A `mod` declaration whose file is one of the module's own ancestors (`#[path =
    /// "lib.rs"] mod again;`): following it would never end.
    #[error("unanalysable: module `{module}` includes {path}, which is already being read as one of its ancestors", path = path.display())]
    ModuleCycle {
        /// The module's path.
        module: String,
        /// The file it names.
        path: PathBuf,
    },
    /// More modules than the lint loads (a tree of `#[path]` modules can name the same files
    /// exponentially many times).
    #[error("unanalysable: module `{module}` is past the limit of {limit} modules")]
    TooManyModules {
        /// The first module not loaded.
        module: String,
        /// The limit.
        limit: usize,
    },
    /// Neither `Cargo.toml` nor a `lib.rs` was found.
    #[error("no crate at {path}: expected a Cargo.toml, src/lib.rs or src/main.rs", path = .0.display())]
    NoCrate(PathBuf),
}

impl LintError {
    /// The file the problem is in, and its 1-based line when known.
    pub fn location(&self) -> Option<(&Path, Option<usize>)> {
        match self {
            LintError::Io(path, _)
            | LintError::Manifest(path, _)
            | LintError::NotAFile(path)
            | LintError::NoCrate(path)
            | LintError::TooLarge { path, .. }
            | LintError::TooMuchCode { path, .. }
            | LintError::ModuleCycle { path, .. } => Some((path, None)),
            LintError::Parse { file, line, .. } | LintError::TooDeep { file, line, .. } => {
                Some((file, Some(*line)))
            }
            LintError::Policy { file, line, .. } => Some((Path::new(file), Some(*line))),
            LintError::MissingModule { tried, .. } => tried.first().map(|p| (p.as_path(), None)),
            LintError::TooManyModules { .. } => None,
        }
    }
}

/// How to run the lint.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Take each tool's policy from this manifest instead of its attribute (a tool missing
    /// from the manifest keeps its attribute's policy).
    pub manifest: Option<Manifest>,
    /// Crates (as code names them, `my_sandbox`) whose functions are trusted infrastructure:
    /// calls into them are not followed. For a supervisor such as the sandbox runner, whose own
    /// housekeeping (cgroups, `/proc`) is not something the tool does.
    pub trusted: Vec<String>,
}

pub use policy_analysis::lint::findings::{Location, Rule, Step};

/// A capability a tool uses without declaring it, or code it calls that cannot be analysed:
/// the engine's one findings type (shared with the `#[tool]` attribute), located in the
/// analysed source.
pub type Finding = policy_analysis::lint::findings::Finding<Location>;

/// The result of a run.
#[derive(Debug, Default)]
pub struct Report {
    /// How many tools were checked.
    pub tools: usize,
    /// Violations, in source order.
    pub findings: Vec<Finding>,
    /// Parts of the code that could not be read: the verdict is incomplete.
    pub problems: Vec<LintError>,
    /// The analysed files and their text, for rendering.
    pub sources: Vec<(String, String)>,
}

impl Report {
    /// Whether any tool uses more than it declares.
    pub fn violated(&self) -> bool {
        !self.findings.is_empty()
    }

    /// The exit code of `toolpolicy-lint`: 2 when part of the code could not be read, else 1
    /// on any finding, else 0.
    pub fn exit_code(&self) -> u8 {
        if !self.problems.is_empty() {
            2
        } else if self.violated() {
            1
        } else {
            0
        }
    }
}

/// The stack of the thread the lint runs on. Parsing and walking recurse once per level of
/// nesting; inputs are refused past a nesting estimate (`nesting::MAX_NESTING`), and this stack
/// holds that depth several times over even in an unoptimised build. It is address space, not
/// memory: only the pages a deep file really uses are touched.
const LINT_STACK_BYTES: usize = 512 * 1024 * 1024;

/// Checks every tool of the crate or workspace at `path`.
///
/// Runs on a thread of its own with a large stack (see `LINT_STACK_BYTES`), so that no input
/// can overflow the caller's stack.
pub fn lint(path: &Path, options: &Options) -> Result<Report, LintError> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("toolpolicy-lint".into())
            .stack_size(LINT_STACK_BYTES)
            .spawn_scoped(scope, || lint_here(path, options));
        match worker {
            Ok(handle) => match handle.join() {
                Ok(result) => result,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            // No thread (a process limit): run here, with the caller's stack.
            Err(_) => lint_here(path, options),
        }
    })
}

fn lint_here(path: &Path, options: &Options) -> Result<Report, LintError> {
    let crates = workspace::discover(path)?;
    let program = program::Program::load(path, &crates)?;
    let policy_of = |name: &str| {
        options
            .manifest
            .as_ref()
            .and_then(|m| m.tools.get(name))
            .map(|entry| entry.policy.clone())
    };
    let (tools, mut findings) = analysis::check(&program, &policy_of, &options.trusted);
    findings.sort_by(|a, b| {
        (&a.at.file, a.at.line, a.at.column, &a.tool).cmp(&(
            &b.at.file,
            b.at.line,
            b.at.column,
            &b.tool,
        ))
    });
    findings.dedup();
    Ok(Report {
        tools,
        findings,
        sources: program
            .files
            .iter()
            .map(|f| (f.display.clone(), f.text.clone()))
            .collect(),
        problems: program.problems,
    })
}
